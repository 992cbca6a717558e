import Foundation
import PocketTestSupport
import XCTest

/// One exit status and one stderr line per error class (README's table).
final class ExitStatusTests: XCTestCase {
    private func assertFails(_ args: [String], status: Int32, mentions: String, stdoutEmpty: Bool = true,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let run = try PocketBinary.run(args, file: file, line: line)
        XCTAssertEqual(run.status, status, run.stderrText, file: file, line: line)
        XCTAssertEqual(run.stderrLines.count, 1, "one line: \(run.stderrText)", file: file, line: line)
        XCTAssertTrue(run.stderrLines.first?.hasPrefix("pocket: ") ?? false, run.stderrText, file: file, line: line)
        XCTAssertTrue(run.stderrText.contains(mentions), "\(run.stderrText) should mention \(mentions)", file: file, line: line)
        if stdoutEmpty { XCTAssertEqual(run.stdout.count, 0, file: file, line: line) }
    }

    func testFailTurnsErrorStatusesIntoExit22WithoutBody() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/404") { _ in .text("not here", status: 404) }
        server.route("/500") { _ in .text("broken", status: 500) }
        try assertFails(["-f", server.url("/404")], status: 22, mentions: "404")
        try assertFails(["-f", server.url("/500")], status: 22, mentions: "500")
        let plain = try PocketBinary.run([server.url("/404")])
        XCTAssertEqual(plain.status, 0, "without -f a 404 is an answer")
        XCTAssertEqual(plain.stdoutText, "not here")
    }

    func testMaxTimeOnAStallingServer() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/stall") { _ in .stall(milliseconds: 30_000) }
        try assertFails(["-m", "0.5", server.url("/stall")], status: 28, mentions: "total_timeout")
    }

    func testConnectionResetMidBodyIsExit56() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/reset") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"), .send(Array(repeating: 0x61, count: 300)),
                  .sleep(milliseconds: 50), .reset])
        }
        try assertFails([server.url("/reset")], status: 56, mentions: "connection_reset", stdoutEmpty: false)
    }

    func testConnectRefused() throws {
        let port = try closedPort()
        try assertFails(["http://127.0.0.1:\(port)/"], status: 7, mentions: "connection_refused")
        try assertFails(["http://127.0.0.1:\(port)/"], status: 7, mentions: "cannot connect to 127.0.0.1 port \(port): ")
    }

    func testDNSFailure() throws {
        try assertFails(["http://no-such-host.invalid/"], status: 6, mentions: "dns_failure")
        try assertFails(["http://no-such-host.invalid/"], status: 6, mentions: "could not resolve host no-such-host.invalid: ")
    }

    func testMalformedURL() throws {
        try assertFails(["not a url"], status: 3, mentions: "malformed URL")
        try assertFails(["ftp://127.0.0.1/x"], status: 3, mentions: "unsupported scheme")
    }

    func testMalformedResponse() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/bad") { _ in .raw([.sendString("HTTP/1.1 2x0 Nope\r\nContent-Length: 1\r\n\r\nx"), .close]) }
        try assertFails([server.url("/bad")], status: 8, mentions: "bad_status_line")
    }

    func testTruncatedBodyIsNeverExitZero() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/cut") { _ in .closeMidBody(declaredLength: 1_000, sentPrefix: Array(repeating: 0x61, count: 300)) }
        let run = try PocketBinary.run([server.url("/cut")])
        XCTAssertEqual(run.status, 18, "curl's partial file: \(run.stderrText)")
        XCTAssertTrue(run.stderrText.contains("truncated_body"), run.stderrText)
        XCTAssertLessThanOrEqual(run.stdout.count, 300, "what arrived may be out, but the exit says it is short")
    }

    func testHeadTooLarge() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let huge = String(repeating: "v", count: 70_000)
        server.route("/big-head") { _ in .response(headers: [("X-Huge", huge)], body: Array("x".utf8)) }
        try assertFails([server.url("/big-head")], status: 63, mentions: "response_head_too_large")
    }

    func testLocalFiles() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("x") }
        try assertFails(["-o", "/nonexistent-dir/x", server.url("/x")], status: 23, mentions: "/nonexistent-dir")
        try assertFails(["--data-binary", "@/nonexistent-file", server.url("/x")], status: 26, mentions: "/nonexistent-file")
        try assertFails(["-d", "@/nonexistent-file", server.url("/x")], status: 26, mentions: "/nonexistent-file")
    }

    func testInvalidHeaderValue() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("x") }
        try assertFails(["-H", "X-Bad: a\u{7F}b\u{1}", server.url("/x")], status: 43, mentions: "invalid_header_value")
        try assertFails(["-H", "no colon here", server.url("/x")], status: 64, mentions: "Name: value")
    }

    func testRetryTransientStatuses() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let count = Counter()
        server.route("/flaky") { _ in
            count.next() < 2 ? .text("busy", status: 503, headers: [("Retry-After", "0")]) : .text("done")
        }
        let run = try PocketBinary.run(["--retry", "3", server.url("/flaky")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "busybusydone", "each failed attempt's body is written, as curl")
        XCTAssertEqual(server.requestCount, 3)
        XCTAssertEqual(run.stderrLines.count, 2, run.stderrText)
        XCTAssertTrue(run.stderrLines.allSatisfy { $0.contains("retrying in 0 s") }, run.stderrText)
    }

    func testRetryGivesUpAndReturnsTheLastAnswer() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/down") { _ in .text("still down", status: 503) }
        let run = try PocketBinary.run(["--retry", "1", server.url("/down")])
        XCTAssertEqual(run.status, 0, "the last 503 is an answer without -f")
        XCTAssertEqual(run.stdoutText, "still downstill down", "both answers, as curl writes them")
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertTrue(run.stderrText.contains("retrying in 1 s"), "curl's first backoff: \(run.stderrText)")
        let failed = try PocketBinary.run(["-f", "--retry", "1", "-s", server.url("/down")])
        XCTAssertEqual(failed.status, 22)
        XCTAssertEqual(server.requestCount, 4, "-f does not stop --retry on a transient status")
    }

    func testRetryAConnectFailureThenGiveUp() throws {
        let run = try PocketBinary.run(["--retry", "1", "http://127.0.0.1:\(try closedPort())/"])
        XCTAssertEqual(run.status, 7)
        XCTAssertEqual(run.stderrLines.count, 2, run.stderrText)
        XCTAssertTrue(run.stderrLines.first?.contains("retrying in 1 s (0 retries left)") ?? false, run.stderrText)
        XCTAssertTrue(run.stderrLines.last?.contains("connection_refused") ?? false, run.stderrText)
    }

    func testRetryNotForOtherStatuses() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/nope") { _ in .text("no", status: 404) }
        let run = try PocketBinary.run(["--retry", "3", server.url("/nope")])
        XCTAssertEqual(run.status, 0)
        XCTAssertEqual(server.requestCount, 1)
    }
}

/// A thread-safe counter for handlers.
final class Counter: @unchecked Sendable {
    // Invariant: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0

    /// The count before this call.
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value - 1
    }
}

/// `--connect-timeout` against a listener whose accept queue is full.
final class ConnectTimeoutCommandTests: XCTestCase {
    func testConnectTimeout() throws {
        let queue = try FullAcceptQueue()
        defer { queue.close() }
        let run = try PocketBinary.run(["--connect-timeout", "0.3", "http://127.0.0.1:\(queue.port)/"])
        XCTAssertEqual(run.status, 28, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("connect_timeout"), run.stderrText)
        let bad = try PocketBinary.run(["--connect-timeout", "0", "http://127.0.0.1:\(queue.port)/"])
        XCTAssertEqual(bad.status, 64)
    }
}
