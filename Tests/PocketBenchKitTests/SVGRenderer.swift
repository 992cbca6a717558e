import Foundation
import XCTest

/// Draws SVG to PNG with Debian's `rsvg-convert` (librsvg2-bin, installed by
/// scripts/setup.sh): a real renderer proves the charts draw, beyond parsing.
/// Without it the test is skipped on a workstation and fails on CI (`CI` set).
enum SVGRenderer {
    static let candidates = ["/usr/bin/rsvg-convert", "/usr/local/bin/rsvg-convert"]

    static func executable(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        let message = "rsvg-convert is missing: install librsvg2-bin (scripts/setup.sh)"
        if ProcessInfo.processInfo.environment["CI"] != nil {
            XCTFail(message, file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        throw XCTSkip(message)
    }

    /// The PNG of `svg`'s first drawing: its width and height in pixels.
    /// Fails the test when rsvg-convert refuses the SVG or writes no PNG.
    @discardableResult
    static func render(_ svg: String, name: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> (width: Int, height: Int) {
        let tool = try executable(file: file, line: line)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-charts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("chart.svg"), output = dir.appendingPathComponent("chart.png")
        try Data(svg.utf8).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["--format", "png", "--output", output.path, input.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, "\(name): rsvg-convert: \(stderr)", file: file, line: line)
        let png = (try? Data(contentsOf: output)) ?? Data()
        // The PNG signature, then the IHDR chunk: width and height, big-endian.
        guard png.count > 24, png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            XCTFail("\(name): rsvg-convert wrote no PNG (\(png.count) bytes)", file: file, line: line)
            return (0, 0)
        }
        func be32(_ at: Int) -> Int { png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (be32(16), be32(20))
    }
}
