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
        let kill = try PocketBinary.run(["bench", "--replicas", "2", "--kill-replica", "3:1s"])
        XCTAssertEqual(kill.status, 64)
        XCTAssertTrue(kill.stderrText.contains("--kill-replica 3: there are 2 replicas"), kill.stderrText)
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

    // MARK: faults of embedded replicas

    /// Replica 2 of 3 is killed 0.5 s into the run (connections refused,
    /// open ones reset); ejection after 3 failures in a row takes it out
    /// within a second of the kill, and no request started after that
    /// ejection fails. With 2 retries, the requests it failed go to the
    /// other replicas; with none, they fail, and count before the ejection.
    /// The set goes round-robin, which sends the dead replica every third
    /// request until it is out (power of two choices may avoid it after a
    /// failure, and then take longer to see three in a row).
    func testKilledReplicaIsEjectedAndLaterRequestsSucceed() throws {
        let args = ["bench", "--replicas", "3", "--kill-replica", "2:500ms", "--rate", "400", "--max-seconds", "1.5",
                    "--connections", "32", "--warmup", "60", "--eject-after", "3", "--json"]
        for retries in ["2", "0"] {
            let r = try report(try PocketBinary.run(args + ["--retries", retries], timeout: 120))
            let run = "--retries \(retries): \(r)"
            XCTAssertEqual(r["killed_replica"] as? Int, 2, run)
            let killedAt = try XCTUnwrap(r["killed_at_ms"] as? Double, run)
            XCTAssertGreaterThanOrEqual(killedAt, 500, run)
            XCTAssertLessThan(killedAt, 1_500, run)
            XCTAssertEqual(r["ejections"] as? Int, 1, run)
            let ejectedAfter = try XCTUnwrap(r["ejected_after_kill_ms"] as? Double, "not ejected: \(run)")
            XCTAssertLessThan(ejectedAfter, 1_000, "ejected within 1 s of the kill: \(run)")
            XCTAssertEqual(r["errors_after_ejection"] as? Int, 0, run)
            let before = try XCTUnwrap(r["errors_before_ejection"] as? Int, run)
            XCTAssertEqual(r["errors"] as? Int, before, run)
            let sent = try XCTUnwrap(r["sent"] as? Int, run)
            XCTAssertGreaterThanOrEqual(sent, 540, "the live replicas keep up with 400/s: \(run)")
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(r["server_requests"] as? Int, run), sent - before, run)
            if retries == "0" {
                XCTAssertGreaterThan(before, 0, "without retries, the requests the dead replica fails fail: \(run)")
            }
        }
    }

    /// Both replicas answer 503 to everything and each GET may be tried 3
    /// times: without a budget, the servers get 3 requests for each sent;
    /// with a budget of 10 %, (1 + 10 %) x sent plus the budget's floor, as
    /// in testRetryBudgetBoundsARetryStorm (each 10-s window: 100, plus 1).
    /// At 2,000/s the floor is small beside the share, so the bound also
    /// tells 10 % from the client's default 20 %.
    func testFailingReplicasRetryStormIsBoundedByTheBudget() throws {
        let args = ["bench", "--replicas", "2", "--failing-replica", "1:503", "--failing-replica", "2:503",
                    "--max-seconds", "1", "--connections", "512", "--warmup", "0", "--retries", "2", "--json"]
        let r = try report(try PocketBinary.run(args + ["--rate", "2000", "--retry-budget", "10"], timeout: 120))
        let sent = try XCTUnwrap(r["sent"] as? Int)
        XCTAssertGreaterThan(sent, 500)
        XCTAssertEqual(r["bad_status"] as? Int, sent, "every answer is a 503")
        let served = try XCTUnwrap(r["server_requests"] as? Int)
        let elapsed = try XCTUnwrap(r["elapsed_s"] as? Double)
        let windows = Int((elapsed / 10).rounded(.up)) + 1
        XCTAssertLessThanOrEqual(served, sent + sent / 10 + 101 * windows, "sent \(sent) in \(elapsed) s")
        XCTAssertGreaterThan(served, sent, "some retries were made")

        let storm = try report(try PocketBinary.run(args + ["--rate", "200", "--retry-budget", "off"], timeout: 120))
        let stormSent = try XCTUnwrap(storm["sent"] as? Int)
        XCTAssertGreaterThan(stormSent, 100)
        XCTAssertEqual(storm["server_requests"] as? Int, 3 * stormSent, "no budget: every attempt is made")
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
