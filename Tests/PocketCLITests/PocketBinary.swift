import Foundation
import XCTest

/// The built `pocket` executable, run as a subprocess. SwiftPM puts it next
/// to the test bundle (`swift build --build-tests` builds every product);
/// a test target cannot depend on an executable target reliably on Linux,
/// so it is found there, and a missing binary fails the test with the path.
struct PocketBinary {
    /// The outcome of one run.
    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: Data
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Non-empty stderr lines.
        var stderrLines: [String] { stderrText.split(separator: "\n").map(String.init) }
    }

    static func path(_ name: String = "pocket", file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        if name.hasPrefix("/") { return URL(fileURLWithPath: name) }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        // The test bundle is .build/<triple>/debug/PocketPackageTests.xctest.
        let candidate = exe.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            XCTFail("the \(name) binary is missing at \(candidate.path): build it with `swift build --build-tests`",
                    file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        return candidate
    }

    /// Runs `pocket args` (or another product), with `stdin` bytes and
    /// `directory` as its working directory; kills it after `timeout`
    /// seconds (generous: the machine may be loaded) and fails the test then.
    @discardableResult
    static func run(_ args: [String], binary: String = "pocket", stdin: Data? = nil, directory: URL? = nil,
                    timeout: TimeInterval = 120, file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        let process = Process()
        process.executableURL = try path(binary, file: file, line: line)
        process.arguments = args
        if let directory { process.currentDirectoryURL = directory }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out"), err = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = outHandle
        process.standardError = errHandle
        if let stdin {
            let input = scratch.appendingPathComponent("in")
            _ = FileManager.default.createFile(atPath: input.path, contents: stdin)
            process.standardInput = try FileHandle(forReadingFrom: input)
        } else {
            process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        }
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            XCTFail("pocket \(args.joined(separator: " ")) did not finish in \(Int(timeout)) s", file: file, line: line)
        }
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        return Run(status: process.terminationStatus, stdout: try Data(contentsOf: out), stderr: try Data(contentsOf: err))
    }

    /// A fresh temporary directory, removed by the caller's `defer`.
    static func scratchDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-cli-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}
