import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketHedgingPolicy`: hedges through real sockets against a server that
/// stalls some requests, and the latency window on its own.
final class HedgingTests: XCTestCase {
    private let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    /// Answers the first `stalled` requests late (after `stallMilliseconds`;
    /// with `midBody`, a head and 2 of 10 body bytes first), the rest at once.
    private func server(stalled: Int, stallMilliseconds: Int = 2000, midBody: Bool = false) throws -> TestServer {
        let server = try TestServer()
        let seen = Lock(0)
        let ok = self.ok
        server.route("/") { _ in
            let n = seen.withLock { $0 += 1; return $0 }
            guard n <= stalled else { return .raw([.sendString(ok)]) }
            if midBody {
                return .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"), .stall(milliseconds: stallMilliseconds), .close])
            }
            return .raw([.sleep(milliseconds: stallMilliseconds), .sendString(ok)])
        }
        return server
    }

    /// A client sending through `transport`, hedging after 30 ms.
    private func hedgingClient(through transport: some PocketTransport) throws -> PocketClient {
        try makeClient {
            $0.handling.transport = transport
            $0.handling.hedging = .after(.milliseconds(30))
        }
    }

    private func states(_ client: PocketClient) -> (Task<[PocketTaskEvent], Never>, PocketTaskEvents) {
        let events = client.events()
        return (Task { var seen: [PocketTaskEvent] = []; for await e in events { seen.append(e) }; return seen }, events)
    }

    func testAHedgeWinsAndTheLosersConnectionIsClosedNotPooled() async throws {
        let server = try server(stalled: 1, stallMilliseconds: 3000, midBody: true)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = .after(.milliseconds(50)) }
        let (collected, _) = states(client)
        let start = ContinuousClock.now
        let response = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(response.text, "ok")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1), "the hedge's answer, not the stalled one")
        XCTAssertEqual(server.requestCount, 2)
        // The loser, cancelled mid-body, is closed: one connection stays open.
        XCTAssertTrue(server.waitUntil(timeout: 2) { $0.openConnections == 1 }, "open: \(server.openConnections)")
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        let requests = server.receivedRequests
        XCTAssertEqual(requests.count, 3)
        XCTAssertEqual(requests[2].connectionIndex, requests[1].connectionIndex, "the winner's connection is reused")
        XCTAssertEqual(server.acceptedConnections, 2, "and the loser's never is")
        try await client.shutdown()
        let events = await collected.value
        XCTAssertEqual(events.filter { $0.state == .hedging }.map(\.hedge), [1])
        XCTAssertEqual(events.filter { $0.state == .hedgeWon }.map(\.hedge), [1])
    }

    func testTheClientCountsTheHedgesItSentAndThoseThatWon() async throws {
        // The first request to arrive stalls: a request and its hedge race
        // (which wins depends on which the server sees first), then prompt ones.
        let server = try server(stalled: 1, stallMilliseconds: 2000)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = .after(.milliseconds(300)) }
        XCTAssertEqual(client.hedgeStatistics, PocketHedgeStatistics(sent: 0, won: 0))
        let (collected, _) = states(client)
        for _ in 0..<3 { _ = try await client.send(PocketRequest(url: url(server, "/"))) }
        let statistics = client.hedgeStatistics
        try await client.shutdown()
        let events = await collected.value
        XCTAssertGreaterThanOrEqual(statistics.sent, 1, "the stalled request was hedged")
        XCTAssertEqual(server.requestCount, 3 + statistics.sent)
        XCTAssertEqual(statistics, PocketHedgeStatistics(sent: events.filter { $0.state == .hedging }.count,
                                                         won: events.filter { $0.state == .hedgeWon }.count),
                       "as the requests' events count them")
    }

    func testAPromptAnswerSendsNoHedge() async throws {
        let server = try server(stalled: 0)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = .after(.milliseconds(500)) }
        for _ in 0..<10 { _ = try await client.send(PocketRequest(url: url(server, "/"))) }
        XCTAssertEqual(server.requestCount, 10)
    }

    func testANonIdempotentRequestIsNeverHedged() async throws {
        let server = try server(stalled: 1, stallMilliseconds: 300)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = .after(.milliseconds(30)) }
        var post = PocketRequest(url: url(server, "/"))
        post.method = .post
        _ = try await client.send(post)
        XCTAssertEqual(server.requestCount, 1)
    }

    func testAtMostMaxHedgesAreSent() async throws {
        let server = try server(stalled: 10, stallMilliseconds: 400)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = PocketHedgingPolicy(delay: .fixed(.milliseconds(40)), maxHedges: 2) }
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(server.requestCount, 3)
    }

    func testASpentHedgingBudgetSendsNoHedge() async throws {
        let server = try server(stalled: 1, stallMilliseconds: 300)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = PocketHedgingPolicy(delay: .fixed(.milliseconds(30)), budgetPercent: 0, budgetMinimumPerSecond: 0) }
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(server.requestCount, 1)
    }

    func testARequestCanHedgeOnItsOwn() async throws {
        let server = try server(stalled: 1, stallMilliseconds: 2000)
        defer { server.shutdown() }
        let client = try makeClient()
        let start = ContinuousClock.now
        _ = try await client.send(PocketRequest(url: url(server, "/")), options: PocketSendOptions(hedging: .after(.milliseconds(40))))
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        XCTAssertEqual(server.requestCount, 2)
    }

    func testADeadlineBoundsTheRequestAndItsHedges() async throws {
        let server = try server(stalled: 100, stallMilliseconds: 3000)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = PocketHedgingPolicy(delay: .fixed(.milliseconds(50)), maxHedges: 2) }
        let start = ContinuousClock.now
        _ = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(in: .milliseconds(200)) {
                try await client.send(PocketRequest(url: url(server, "/")))
            }
        }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(240))
        XCTAssertEqual(server.requestCount, 3)
    }

    func testAFailureAtTheDeadlineEndsTheRaceWithoutWaitingForTheHedges() async throws {
        // The request's own call ends at the deadline; its hedge's call
        // ignores the deadline and cancellation for a second. The race
        // ends on the request's failure at the deadline: the hedges share
        // it, none can answer in time.
        let transport = DeadlineHonouringFirstTransport()
        let client = try hedgingClient(through: transport)
        let start = ContinuousClock.now
        _ = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(in: .milliseconds(150)) {
                try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:9/")!))
            }
        }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(600), "not the hedge's second")
        XCTAssertEqual(transport.calls.withLock { $0 }, 2, "the request and its hedge")
    }

    func testAHedgeForAReplicaSetGoesThroughTheHopToAnotherReplica() async throws {
        // Replica 0 stalls; the hedge, a hop of its own, leases a replica
        // the request has not used.
        let servers = try (0..<2).map { i in
            let server = try TestServer()
            server.route("/x") { _ in i == 0 ? .raw([.sleep(milliseconds: 2000), .sendString("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n0")])
                                             : .text("\(i)") }
            return server
        }
        defer { servers.forEach { $0.shutdown() } }
        let set = PocketReplicaSet(name: "svc", endpoints: servers.map { PocketReplicaEndpoint(host: $0.host, port: UInt16($0.port)) },
                                   balancing: .roundRobin)
        let client = try makeClient {
            $0.replicaSets = [set]
            $0.handling.hedging = .after(.milliseconds(50))
        }
        let (collected, _) = states(client)
        let start = ContinuousClock.now
        let response = try await client.send(PocketRequest(url: URL(string: "http://svc/x")!))
        XCTAssertEqual(response.text, "1", "the other replica's answer")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        XCTAssertEqual(servers.map(\.requestCount), [1, 1])
        XCTAssertEqual(set.statistics.map(\.failures), [0, 0], "the cancelled loser does not count against its replica")
        try await client.shutdown()
        let events = await collected.value
        XCTAssertEqual(events.filter { $0.state == .hedgeWon }.map(\.hedge), [1])
    }

    func testAPercentileDelayWaitsForSamples() async throws {
        let server = try server(stalled: 0)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = PocketHedgingPolicy(delay: .percentile(95)) }
        let origin = PocketClient.originKey(url(server, "/"))
        // Until the window holds its minimum, no delay is known and no hedge
        // is sent, however slow a request is (a sanitizer build is slow).
        let before = LatencyWindow.minimumSamples - 1
        for _ in 0..<before { _ = try await client.send(PocketRequest(url: url(server, "/"))) }
        XCTAssertEqual(server.requestCount, before, "no hedge before the window has its samples")
        XCTAssertNil(client.latencies.percentile(origin, 95))
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertNotNil(client.latencies.percentile(origin, 95), "the latencies were kept")
    }

    func testTheRequestItselfWinsAndTheRunningHedgeIsCancelled() async throws {
        // The request answers after 200 ms; its hedge (sent at 50 ms) sends a
        // head and stalls mid-body: the request wins, the hedge is cancelled
        // and its connection closed, long before its stall ends.
        let server = try TestServer()
        defer { server.shutdown() }
        let seen = Lock(0)
        let ok = self.ok
        server.route("/") { _ in
            let n = seen.withLock { $0 += 1; return $0 }
            if n == 1 { return .raw([.sleep(milliseconds: 200), .sendString(ok)]) }
            return .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"), .stall(milliseconds: 5000), .close])
        }
        let client = try makeClient { $0.handling.hedging = .after(.milliseconds(50)) }
        let (collected, _) = states(client)
        let start = ContinuousClock.now
        let response = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(response.text, "ok")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        XCTAssertEqual(server.requestCount, 2, "one hedge was sent")
        XCTAssertTrue(server.waitUntil(timeout: 2) { $0.openConnections == 1 }, "the hedge's connection is closed: \(server.openConnections) open")
        try await client.shutdown()
        let events = await collected.value
        XCTAssertEqual(events.filter { $0.state == .hedging }.map(\.hedge), [1])
        XCTAssertEqual(events.filter { $0.state == .hedgeWon }.count, 0, "the request itself won")
    }

    func testCancellingTheCallerCancelsTheRequestAndItsHedges() async throws {
        let server = try server(stalled: 100, stallMilliseconds: 5000, midBody: true)
        defer { server.shutdown() }
        let client = try makeClient { $0.handling.hedging = PocketHedgingPolicy(delay: .fixed(.milliseconds(30)), maxHedges: 2) }
        let target = url(server, "/")
        let task = Task { try await client.send(PocketRequest(url: target)) }
        XCTAssertTrue(server.waitUntil(timeout: 2) { $0.requestCount == 3 }, "the request and two hedges")
        let start = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("a cancelled request answered")
        } catch {
            XCTAssertEqual((error as? PocketError)?.code, .cancelled, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        XCTAssertTrue(server.waitUntil(timeout: 2) { $0.openConnections == 0 }, "every runner's connection is closed: \(server.openConnections) open")
    }

    func testThroughATransportTheLosingRequestIsCancelled() async throws {
        // A transport's call can only be ended by its task's cancellation:
        // the request runs in a task of its own, which the winning hedge cancels.
        let transport = StallingFirstTransport()
        let client = try hedgingClient(through: transport)
        let start = ContinuousClock.now
        let response = try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:9/")!))
        XCTAssertEqual(response.text, "1", "the hedge's answer")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        let deadline = ContinuousClock.now + .seconds(2)
        while !transport.firstCancelled.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertTrue(transport.firstCancelled.withLock { $0 }, "the stalled request was cancelled")
        XCTAssertEqual(transport.calls.withLock { $0 }, 2)
    }

    func testWithAResponseCacheTheLosingRequestIsStillCancelled() async throws {
        // The request goes through the cache step, whose network hop the
        // race must still be able to cancel when the hedge wins.
        let server = try server(stalled: 1, stallMilliseconds: 5000, midBody: true)
        defer { server.shutdown() }
        let client = try makeClient {
            $0.handling.cache = PocketResponseCache(memoryCapacity: 1 << 20)
            $0.handling.hedging = .after(.milliseconds(50))
        }
        let start = ContinuousClock.now
        let response = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(response.text, "ok")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertTrue(server.waitUntil(timeout: 2) { $0.openConnections == 1 }, "the loser's connection is closed: \(server.openConnections) open")
    }

    func testHedgeTimersFireWhatIsDueInOrderAndNotWhatWasDisarmed() async throws {
        let timers = HedgeTimers()
        let fired = Lock<[Int]>([])
        let all = (0..<4).map { n in TimerProbe { fired.withLock { $0.append(n) } } }
        let now = ContinuousClock.now
        // Armed out of order; probe 1 is disarmed before it is due.
        timers.arm(all[2], at: now + .milliseconds(60))
        timers.arm(all[0], at: now + .milliseconds(20))
        timers.arm(all[3], at: now + .milliseconds(80))
        timers.arm(all[1], at: now + .milliseconds(40))
        timers.disarm(all[1])
        XCTAssertEqual(all[1].timerSlot, -1)
        let deadline = ContinuousClock.now + .seconds(2)
        while fired.withLock({ $0.count }) < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(fired.withLock { $0 }, [0, 2, 3])
        XCTAssertEqual(all.map(\.timerSlot), [-1, -1, -1, -1], "each left the heap")
        // After a stop nothing is armed or fired.
        timers.stop()
        timers.arm(all[0], at: .now)
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(fired.withLock { $0 }, [0, 2, 3])
    }

    func testLatencyWindowPercentile() {
        var window = LatencyWindow(capacity: 100)
        for i in 1...19 { window.record(Int64(i)) }
        XCTAssertNil(window.percentile(95), "no delay before 20 samples")
        for i in 20...100 { window.record(Int64(i)) }
        XCTAssertEqual(window.percentile(95), 96)
        XCTAssertEqual(window.percentile(50), 51)
        XCTAssertEqual(window.percentile(100), 100)
        // The ring keeps the newest: 100 samples of 1000 push the old ones out.
        for _ in 0..<100 { window.record(1000) }
        XCTAssertEqual(window.percentile(50), 1000)
    }
}

/// A timer that records its firing.
private final class TimerProbe: HedgeTimer, @unchecked Sendable {
    // Unchecked: `timerSlot` is touched under the timers' lock only.
    var timerSlot = -1
    let onFire: @Sendable () -> Void
    init(_ onFire: @escaping @Sendable () -> Void) { self.onFire = onFire }
    func fire() { onFire() }
}

/// A transport whose first call stalls (10 s, or until its task is
/// cancelled) and whose later calls answer at once with their number.
private final class StallingFirstTransport: PocketTransport, Sendable {
    let calls = Lock(0)
    let firstCancelled = Lock(false)

    func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        let n = calls.withLock { $0 += 1; return $0 }
        if n == 1 {
            do {
                try await Task.sleep(for: .seconds(10))
            } catch {
                firstCancelled.withLock { $0 = true }
                throw error
            }
        }
        return PocketResponse(status: 200, reason: "OK", httpMinorVersion: 1, headers: PocketHeaders(), body: Data("\(n - 1)".utf8))
    }
}

/// The first call ends with the total timeout at the task's deadline (as the
/// engine does, its timeout cut to it); every later one answers after a
/// second, whatever the deadline or its task's cancellation.
private final class DeadlineHonouringFirstTransport: PocketTransport, Sendable {
    let calls = Lock(0)

    func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        let n = calls.withLock { $0 += 1; return $0 }
        if n == 1, let deadline = PocketDeadline.current {
            try? await Task.sleep(until: deadline, clock: .continuous)
            throw PocketError(.totalTimeout, "the total timeout passed")
        }
        let end = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
        return PocketResponse(status: 200, reason: "OK", httpMinorVersion: 1, headers: PocketHeaders(), body: Data("late".utf8))
    }
}
