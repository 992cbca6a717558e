import Foundation
import PocketTestSupport
import XCTest

/// `pocket bench --rate` through real sockets: the rate paces the requests
/// (about rate x duration sent, never faster), `--url` given twice takes
/// the replicas in turn, and an embedded slow replica's late answers show
/// in the tail.
final class BenchRateTests: XCTestCase {
    private func report(_ run: PocketBinary.Run) throws -> [String: Any] {
        XCTAssertEqual(run.status, 0, run.stderrText)
        let line = try XCTUnwrap(run.stdoutText.split(separator: "\n").first, run.stderrText)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line))
    }

    func testRateSendsAboutRateTimesDurationInTurn() throws {
        let a = try TestServer()
        defer { a.shutdown() }
        let b = try TestServer()
        defer { b.shutdown() }
        a.route("/") { _ in .text("a") }
        b.route("/") { _ in .text("b") }
        let run = try PocketBinary.run(["bench", "--url", a.url("/"), "--url", b.url("/"), "--rate", "200",
                                        "--max-seconds", "1", "--connections", "4", "--warmup", "4", "--json"],
                                       timeout: 120)
        let r = try report(run)
        XCTAssertEqual(r["offered"] as? Int, 200)
        let sent = try XCTUnwrap(r["sent"] as? Int)
        XCTAssertGreaterThanOrEqual(sent, 180, "a healthy server keeps up with 200/s")
        XCTAssertLessThanOrEqual(sent, 200)
        XCTAssertEqual(r["requests"] as? Int, sent)
        XCTAssertEqual(r["errors"] as? Int, 0)
        XCTAssertEqual(r["replicas"] as? Int, 2)
        XCTAssertEqual(r["rate"] as? Double, 200)
        // 200 requests due every 5 ms: the last is due at 995 ms.
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(r["elapsed_s"] as? Double), 0.99, "paced, not sent back to back")
        for key in ["p50_us", "p99_us", "p999_us", "p9999_us", "hedges_fired", "hedges_won", "ejections"] {
            XCTAssertNotNil(r[key], key)
        }
        XCTAssertEqual(r["hedges_fired"] as? Int, 0)
        XCTAssertEqual(a.requestCount + b.requestCount, 4 + sent)
        XCTAssertLessThanOrEqual(abs(a.requestCount - b.requestCount), 1, "in turn: \(a.requestCount) and \(b.requestCount)")
    }

    /// Replica 2 of 2 answers half its requests 30 ms late: a quarter of
    /// all requests, so p99 is at least 30 ms.
    func testSlowReplicaShowsInTheTail() throws {
        let run = try PocketBinary.run(["bench", "--replicas", "2", "--slow-replica", "2:0.5:30ms", "--rate", "200",
                                        "--max-seconds", "1", "--connections", "16", "--warmup", "8", "--json"],
                                       timeout: 120)
        let r = try report(run)
        XCTAssertEqual(r["replicas"] as? Int, 2)
        XCTAssertEqual(r["embedded_server"] as? Bool, true)
        XCTAssertEqual(r["errors"] as? Int, 0)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(r["p99_us"] as? Double), 30_000)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(r["sent"] as? Int), 180)

        let healthy = try report(try PocketBinary.run(["bench", "--replicas", "2", "--rate", "200", "--max-seconds", "1",
                                                       "--connections", "16", "--warmup", "8", "--json"], timeout: 120))
        XCTAssertLessThan(try XCTUnwrap(healthy["p50_us"] as? Double), 30_000)
    }

    /// Bad input: the usage exit status (64, as `pocket`'s other usage errors) and the flag named.
    func testBadTailFlagsExitWithUsage() throws {
        let run = try PocketBinary.run(["bench", "--replicas", "2", "--slow-replica", "3:0.05:50ms"])
        XCTAssertEqual(run.status, 64)
        XCTAssertTrue(run.stderrText.contains("--slow-replica 3: there are 2 replicas"), run.stderrText)
        let rate = try PocketBinary.run(["bench", "--rate", "0"])
        XCTAssertEqual(rate.status, 64)
        XCTAssertTrue(rate.stderrText.contains("--rate: expected requests per second > 0"), rate.stderrText)
    }
}
