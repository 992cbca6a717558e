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

    // MARK: the policy flags reach the client

    /// Replica 2 of 3 answers half its requests 50 ms late; hedges after
    /// 10 ms go out (within the client's hedging budget) and win.
    func testHedgeAfterSendsHedgesThatWin() throws {
        let r = try report(try PocketBinary.run(["bench", "--replicas", "3", "--slow-replica", "2:0.5:50ms", "--rate", "200",
                                                 "--max-seconds", "1", "--connections", "16", "--warmup", "8",
                                                 "--hedge-after", "10ms", "--json"], timeout: 120))
        XCTAssertEqual(r["errors"] as? Int, 0)
        let fired = try XCTUnwrap(r["hedges_fired"] as? Int)
        XCTAssertGreaterThan(fired, 0)
        XCTAssertGreaterThan(try XCTUnwrap(r["hedges_won"] as? Int), 0, "a hedge to a healthy replica beats a 50 ms answer")
        XCTAssertLessThanOrEqual(fired, 20, "the hedging budget: 5 % of about 200 requests, plus 1 a second")
    }

    /// A replica that refuses connections is ejected after 2 failures in a
    /// row; the requests after go to the other one.
    func testEjectAfterEjectsAFailingReplica() throws {
        let good = try TestServer()
        defer { good.shutdown() }
        good.route("/") { _ in .text("ok") }
        let closed = try TestServer()
        let refusing = closed.url("/")
        closed.shutdown()
        let r = try report(try PocketBinary.run(["bench", "--url", good.url("/"), "--url", refusing, "--rate", "200",
                                                 "--max-seconds", "1", "--connections", "4", "--warmup", "0",
                                                 "--eject-after", "2", "--json"], timeout: 120))
        XCTAssertEqual(r["ejections"] as? Int, 1)
        let errors = try XCTUnwrap(r["errors"] as? Int)
        XCTAssertGreaterThan(errors, 0)
        XCTAssertLessThanOrEqual(errors, 8, "no request goes to the ejected replica")
    }

    /// Every answer is a 503: the retry policy alone would triple the load;
    /// the budget keeps retries to 10 % of the requests plus its floor (10 a
    /// second over its 10 s window: 100).
    func testRetryBudgetBoundsARetryStorm() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("busy", status: 503) }
        let r = try report(try PocketBinary.run(["bench", "--url", server.url("/"), "--rate", "200", "--max-seconds", "1",
                                                 "--connections", "64", "--warmup", "0", "--retry-budget", "10",
                                                 "--json"], timeout: 120))
        let sent = try XCTUnwrap(r["sent"] as? Int)
        XCTAssertGreaterThan(sent, 100)
        // The budget: 10 % of the requests plus 10 a second, counted over
        // each 10-s window. A slow build (a sanitizer's) takes longer than
        // the 1-s run to finish its retries' backoffs: each further 10 s of
        // run allows its own floor.
        let elapsed = try XCTUnwrap(r["elapsed_s"] as? Double)
        let windows = Int((elapsed / 10).rounded(.up)) + 1
        XCTAssertLessThanOrEqual(server.requestCount, sent + sent / 10 + 101 * windows, "sent \(sent) in \(elapsed) s")
        XCTAssertGreaterThan(server.requestCount, sent, "some retries were made")
    }

    /// `--deadline` ends each request by then: the slow replica's answers
    /// (all 200 ms late) fail, the fast one's do not.
    func testDeadlineEndsLateRequests() throws {
        let r = try report(try PocketBinary.run(["bench", "--replicas", "2", "--slow-replica", "2:1:200ms", "--rate", "100",
                                                 "--max-seconds", "1", "--connections", "32", "--warmup", "0",
                                                 "--deadline", "50ms", "--json"], timeout: 120))
        let sent = try XCTUnwrap(r["sent"] as? Int)
        let errors = try XCTUnwrap(r["errors"] as? Int)
        XCTAssertGreaterThan(errors, sent / 3)
        XCTAssertLessThan(errors, sent)
        XCTAssertTrue((r["first_error"] as? String)?.contains("deadline") ?? false, "\(r["first_error"] ?? "none")")
        XCTAssertLessThan(try XCTUnwrap(r["p99_us"] as? Double), 200_000)
    }
}
