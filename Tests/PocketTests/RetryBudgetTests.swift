import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketRetryBudget`: the window's arithmetic on a fake clock, and a
/// retry storm through real sockets.
final class RetryBudgetTests: XCTestCase {
    private let second: Int64 = 1_000_000_000

    private func window(percent: Double = 20, perSecond: Double = 0, seconds: Int64 = 10) -> BudgetWindow {
        BudgetWindow(percent: percent, perSecond: perSecond, window: .seconds(seconds), now: 0)
    }

    /// Withdraws until refused (or 100,000 times: a budget that never
    /// refuses fails the test instead of hanging it); returns how many were
    /// granted.
    private func drain(_ w: inout BudgetWindow, now: Int64, requests: UInt64) -> Int {
        var granted = 0
        while granted < 100_000, w.withdraw(now: now, requests: requests) { granted += 1 }
        return granted
    }

    func testRetriesAreAShareOfRequests() {
        var w = window(percent: 20)
        XCTAssertFalse(w.withdraw(now: 0, requests: 4), "4 requests allow 0.8 retries")
        XCTAssertEqual(drain(&w, now: second / 2, requests: 100), 20)
        XCTAssertEqual(drain(&w, now: second, requests: 110), 2, "10 more requests, 2 more retries")
    }

    /// Two callers read the counter and the clock before the lock: the one
    /// that lost the race brings a smaller count and an older time. That
    /// count must not read as 2^64 new requests (which allowed every retry
    /// for a whole window), nor the time move the window back.
    func testAnOlderCountOrTimeDoesNotMoveTheWindowBack() {
        var w = window(percent: 10)
        XCTAssertEqual(drain(&w, now: 2 * second, requests: 100), 10)
        XCTAssertFalse(w.withdraw(now: second, requests: 90), "an older reading grants nothing")
        XCTAssertEqual(drain(&w, now: 3 * second, requests: 110), 1, "10 more requests than the largest count seen")
    }

    func testTheFloorAllowsRetriesWithoutRequests() {
        var w = window(percent: 0, perSecond: 10, seconds: 10)
        XCTAssertEqual(drain(&w, now: 0, requests: 0), 100, "10 a second over 10 s")
    }

    func testSpentRetriesLeaveTheWindow() {
        var w = window(percent: 0, perSecond: 1, seconds: 10)
        XCTAssertEqual(drain(&w, now: 0, requests: 0), 10)
        XCTAssertFalse(w.withdraw(now: 5 * second, requests: 0))
        XCTAssertEqual(drain(&w, now: 10 * second, requests: 0), 10, "the first bucket's retries have left")
    }

    func testRequestsLeaveTheWindow() {
        var w = window(percent: 50)
        XCTAssertEqual(drain(&w, now: second / 2, requests: 10), 5)
        w.advance(to: 15 * second, requests: 10)
        XCTAssertEqual(w.allowance, 0, accuracy: 1e-9)
        XCTAssertFalse(w.withdraw(now: 15 * second, requests: 10))
    }

    func testRequestsSeenLateAreSpreadOverTheirTime() {
        // 100 requests at a steady rate over 20 s, seen only at its end: the
        // window (nine whole buckets and the current one) keeps the last 9 s
        // of them, not all 100.
        var w = window(percent: 100)
        w.advance(to: 20 * second, requests: 100)
        XCTAssertEqual(w.allowance, 45, accuracy: 0.01)
    }

    func testChargedResendsCountWithoutBeingRefused() {
        var w = window(percent: 10)
        for _ in 0..<3 { w.charge(now: 0, requests: 10) }
        XCTAssertEqual(w.spentTotal, 3)
        XCTAssertFalse(w.withdraw(now: 0, requests: 10), "the resends used the budget")
    }

    func testDefaults() {
        let budget = PocketRetryBudget.default
        XCTAssertEqual(budget.percent, 20)
        XCTAssertEqual(budget.minimumPerSecond, 10)
        XCTAssertEqual(budget.window, .seconds(10))
        XCTAssertEqual(PocketRequestHandling().retryBudget, .default, "on by default")
    }

    /// Every request is answered 503 and the policy allows 5 attempts: the
    /// budget keeps the requests sent within (1 + 20 %) of those offered.
    func testARetryStormStaysWithinTheBudget() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("unavailable", status: 503) }
        let refused = SharedCount()
        let client = try makeClient {
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 5, backoff: .fixed(.zero))
            $0.handling.retryBudget = PocketRetryBudget(percent: 20, minimumPerSecond: 0)
        }
        let events = client.events(bufferingNewest: 10_000)
        let counting = Task { for await event in events where event.state == .retryRefused { refused.add() } }
        let offered = 200
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<offered {
                group.addTask { try await client.send(PocketRequest(url: url(server, "/"))).status }
            }
            for try await status in group { XCTAssertEqual(status, 503) }
        }
        let sent = server.requestCount
        XCTAssertLessThanOrEqual(sent, offered * 12 / 10 + 1)
        XCTAssertGreaterThan(sent, offered, "some retries were made")
        try await client.shutdown()
        _ = await counting.value
        XCTAssertGreaterThan(refused.count, 0, "the refused retries were reported")
    }

    func testWithoutABudgetThePolicyAloneBoundsRetries() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("unavailable", status: 503) }
        let client = try makeClient {
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 5, backoff: .fixed(.zero))
            $0.handling.retryBudget = nil
        }
        for _ in 0..<20 { _ = try await client.send(PocketRequest(url: url(server, "/"))) }
        XCTAssertEqual(server.requestCount, 100)
    }

    func testARefusedFailureSaysSo() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .reset }
        let client = try makeClient {
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 5, backoff: .fixed(.zero))
            $0.handling.retryBudget = PocketRetryBudget(percent: 0, minimumPerSecond: 0)
        }
        let error = await assertPocketError(.connectionReset) { try await client.send(PocketRequest(url: url(server, "/"))) }
        XCTAssertEqual(error?.retryBudgetSpent, true)
        XCTAssertEqual(server.requestCount, 1)
    }
}

/// A count shared between tasks.
struct SharedCount: Sendable {
    private let value = Lock(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
