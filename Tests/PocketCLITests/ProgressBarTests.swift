import Foundation
import PocketTestSupport
import XCTest

/// The progress line appears only when stderr is a terminal: `script`
/// (util-linux) gives the binary a pseudo-terminal and records what it drew.
final class ProgressBarTests: XCTestCase {
    private func underTerminal(_ args: [String]) throws -> PocketBinary.Run {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            XCTFail("/usr/bin/script is needed (Debian's bsdutils, an essential package)")
            throw CocoaError(.fileNoSuchFile)
        }
        let pocket = try PocketBinary.path()
        let command = ([pocket.path] + args).map { "'\($0)'" }.joined(separator: " ")
        return try PocketBinary.run(["-q", "-e", "-c", command, "/dev/null"], binary: "/usr/bin/script")
    }

    func testKnownTotalShowsPercentRateAndTimeLeft() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.routeResource("/f", .init(size: 2_000_000, seed: 3, delayMillisecondsPerPiece: 150, pieceSize: 500_000))
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try underTerminal(["-o", dir.appendingPathComponent("f").path, server.url("/f")])
        XCTAssertEqual(run.status, 0, run.stdoutText)
        XCTAssertTrue(run.stdoutText.contains("100% [####################] 2.0 MB of 2.0 MB"), run.stdoutText)
        XCTAssertTrue(run.stdoutText.contains("/s  ETA "), run.stdoutText)
        let quiet = try underTerminal(["-s", "-o", dir.appendingPathComponent("g").path, server.url("/f")])
        XCTAssertEqual(quiet.status, 0)
        XCTAssertEqual(quiet.stdoutText, "", "-s: no progress")
        server.route("/small") { _ in .text("to the terminal") }
        let onTerminal = try underTerminal([server.url("/small")])
        XCTAssertEqual(onTerminal.stdoutText, "to the terminal", "no progress while the body goes to the same terminal")
    }

    func testUnknownTotalShowsBytesAndRate() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        // A chunked body (no total, to its end) in three chunks 400 ms apart.
        server.route("/c") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nbb8\r\n"),
                  .send(Array(repeating: 0x61, count: 3_000)), .sendString("\r\n"), .sleep(milliseconds: 400),
                  .sendString("3e8\r\n"), .send(Array(repeating: 0x62, count: 1_000)), .sendString("\r\n"), .sleep(milliseconds: 400),
                  .sendString("3e8\r\n"), .send(Array(repeating: 0x63, count: 1_000)), .sendString("\r\n0\r\n\r\n")])
        }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try underTerminal(["-o", dir.appendingPathComponent("c").path, server.url("/c")])
        XCTAssertEqual(run.status, 0, run.stdoutText)
        let lines = run.stdoutText.split(separator: "\r").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertTrue(lines.contains { $0.hasPrefix("down ") && $0.hasSuffix("/s") && !$0.contains("%") },
                      "bytes and rate while the total is unknown: \(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("down 5.0 kB") }, "every byte counted: \(lines)")
        XCTAssertFalse(run.stdoutText.contains("%"), "a chunked body's total stays unknown to the end: \(run.stdoutText)")
    }

    func testUploadProgress() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.keepsRequestBodies = false
        server.route("/up") { _ in .text("") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("up.bin")
        try Data(count: 3_000_000).write(to: file)
        let run = try underTerminal(["--data-binary", "@\(file.path)", "-o", "/dev/null", server.url("/up")])
        XCTAssertEqual(run.status, 0, run.stdoutText)
        XCTAssertTrue(run.stdoutText.contains("up 100% [####################] 3.0 MB of 3.0 MB"), run.stdoutText)
    }

    func testFormUploadEndsOnItsUploadLine() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.keepsRequestBodies = false
        server.route("/form") { _ in .text("") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("part.bin")
        try Data(count: 2_000_000).write(to: file)
        let run = try underTerminal(["-F", "f=@\(file.path)", "-o", "/dev/null", server.url("/form")])
        XCTAssertEqual(run.status, 0, run.stdoutText)
        let drawn = run.stdoutText.split(whereSeparator: { $0 == "\r" || $0 == "\n" })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        XCTAssertTrue(drawn.last?.hasPrefix("up 100% [####################]") == true,
                      "the upload's line is the last one drawn: \(drawn.suffix(3))")
        XCTAssertFalse(drawn.contains { $0.hasPrefix("down") && $0.hasSuffix(" 0 B/s") }, "\(drawn.suffix(3))")
    }
}
