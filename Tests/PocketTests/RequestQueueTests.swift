import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The task queue against the in-process server: caps seen server-side,
/// priorities, cancellation, bound, metrics, memory.
final class RequestQueueTests: XCTestCase {
    func testGlobalCapIsNeverExceededServerSide() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let total = 12, cap = 3
        let gauge = InFlightGauge()
        server.routeCountingInFlight("/slow", gauge: gauge) { _ in
            // Hold each request until as many as the cap allows are in flight.
            gauge.wait(timeout: 5) { current, completed in current >= min(cap, total - completed) }
            return .text("ok")
        }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: cap, maxConcurrentPerHost: cap)
        let tasks = try (0..<total).map { _ in try queue.enqueue(PocketRequest(url: url(server, "/slow"))) }
        for task in tasks {
            let status = try await task.response().status
            XCTAssertEqual(status, 200)
        }
        XCTAssertEqual(gauge.peak, cap, "the cap was reached and never passed")
        XCTAssertEqual(queue.metrics.peakRunning, cap)
        XCTAssertEqual(queue.metrics.completed, total)
        XCTAssertEqual(queue.metrics.pending, 0)
        XCTAssertEqual(queue.metrics.running, 0)
    }

    func testWithoutAQueueTheSameLoadExceedsTheCap() async throws {
        // The control for the test above: the gauge does see more than 3.
        let server = try TestServer()
        defer { server.shutdown() }
        let gauge = InFlightGauge()
        server.routeCountingInFlight("/slow", gauge: gauge) { _ in
            gauge.wait(timeout: 5) { current, completed in current >= 6 - completed }
            return .text("ok")
        }
        let client = try makeClient()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 { group.addTask { try await client.send(PocketRequest(url: url(server, "/slow"))).status } }
            for try await status in group { XCTAssertEqual(status, 200) }
        }
        XCTAssertEqual(gauge.peak, 6)
    }

    func testPerHostCapIsNeverExceededServerSide() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let perHost = 2, total = 12
        let gauge = InFlightGauge()
        server.routeCountingInFlight("/slow", gauge: gauge) { request in
            // Hold each request until its host has as many in flight as it can.
            let host = request.header("Host") ?? ""
            gauge.wait(timeout: 5) { (c: InFlightGauge.Counts) in
                (c.currentByHost[host] ?? 0) >= min(perHost, total / 2 - (c.completedByHost[host] ?? 0))
            }
            return .text("ok")
        }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 8, maxConcurrentPerHost: perHost)
        var tasks: [PocketQueuedTask] = []
        for _ in 0..<(total / 2) {
            tasks.append(try queue.enqueue(PocketRequest(url: url(server, "/slow"))))
            tasks.append(try queue.enqueue(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/slow"))!)))
        }
        for task in tasks {
            let status = try await task.response().status
            XCTAssertEqual(status, 200)
        }
        XCTAssertEqual(gauge.peakByHost["127.0.0.1:\(server.port)"], perHost)
        XCTAssertEqual(gauge.peakByHost["localhost:\(server.port)"], perHost)
        XCTAssertLessThanOrEqual(gauge.peak, 2 * perHost)
    }

    func testPrioritiesThenArrivalOrder() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        server.route("/block") { _ in gate.wait(); return .text("ok") }
        server.route("/p") { _ in .text("ok") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        let blocker = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        var tasks: [PocketQueuedTask] = []
        for (name, priority) in [("a", PocketQueuePriority.low), ("b", .normal), ("c", .high), ("d", .normal), ("e", .high),
                                 ("f", PocketQueuePriority(rawValue: 5))] {
            tasks.append(try queue.enqueue(PocketRequest(url: url(server, "/p?n=\(name)")), priority: priority))
        }
        XCTAssertEqual(queue.metrics.pending, 6)
        gate.release()
        _ = try await blocker.response()
        for task in tasks { _ = try await task.response() }
        XCTAssertEqual(server.receivedRequests.dropFirst().map { $0.query ?? "" }, ["n=c", "n=e", "n=f", "n=b", "n=d", "n=a"])
    }

    func testCancelledPendingRequestIsNeverSent() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        server.route("/block") { _ in gate.wait(); return .text("ok") }
        server.route("/b") { _ in .text("b") }
        server.route("/c") { _ in .text("c") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        let blocker = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        let states = Recorder<PocketTaskState>()
        let b = try queue.enqueue(PocketRequest(url: url(server, "/b")), options: PocketSendOptions(observers: [PocketTaskObserver { states.append($0.state) }]))
        let c = try queue.enqueue(PocketRequest(url: url(server, "/c")))
        b.cancel()
        XCTAssertEqual(b.currentState, .cancelled)
        XCTAssertEqual(queue.metrics.pending, 1)
        gate.release()
        _ = try await blocker.response()
        await assertPocketError(.cancelled) { try await b.response() }
        let text = try await c.response().text
        XCTAssertEqual(text, "c")
        XCTAssertEqual(server.receivedRequests.map(\.path), ["/block", "/c"])
        XCTAssertEqual(states.values, [.pending, .cancelled])
        XCTAssertEqual(queue.metrics.cancelled, 1)
        XCTAssertEqual(queue.metrics.completed, 2)
    }

    func testCancelledRunningRequestClosesItsConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        defer { gate.release() }
        let gauge = server.routeCountingInFlight("/hang") { _ in gate.wait(); return .text("late") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client)
        let task = try queue.enqueue(PocketRequest(url: url(server, "/hang")))
        await assertEventually("the request reached the server") { gauge.current == 1 }
        XCTAssertEqual(task.currentState, .running)
        task.cancel()
        await assertPocketError(.cancelled) { try await task.response() }
        // The server notices the close once its handler returns (a kept
        // connection would stay open for the next request).
        gate.release()
        XCTAssertTrue(server.waitUntil(timeout: 5) { $0.openConnections == 0 }, "the client closed the socket")
        await assertEventually("the slot is free") { queue.metrics.running == 0 }
        XCTAssertEqual(queue.metrics.cancelled, 1)
    }

    func testCallerCancellationCancelsItsQueuedRequest() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        defer { gate.release() }
        server.route("/block") { _ in gate.wait(); return .text("ok") }
        server.route("/never") { _ in .text("sent") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        _ = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        let waiter = Task { try await queue.send(PocketRequest(url: url(server, "/never"))) }
        await assertEventually("the second request is pending") { queue.metrics.pending == 1 }
        waiter.cancel()
        await assertPocketError(.cancelled) { try await waiter.value }
        XCTAssertEqual(queue.metrics.pending, 0)
        gate.release()
        await assertEventually("the blocker finished") { queue.metrics.completed == 1 }
        XCTAssertFalse(server.receivedRequests.contains { $0.path == "/never" })
    }

    func testCancelAllCancelsPendingAndRunning() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        defer { gate.release() }
        let gauge = server.routeCountingInFlight("/hang") { _ in gate.wait(); return .text("late") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 2, maxConcurrentPerHost: 2)
        let tasks = try (0..<7).map { _ in try queue.enqueue(PocketRequest(url: url(server, "/hang"))) }
        await assertEventually("two requests are running") { gauge.current == 2 }
        queue.cancelAll()
        for task in tasks { await assertPocketError(.cancelled) { try await task.response() } }
        XCTAssertEqual(server.requestCount, 2, "pending requests were never sent")
        XCTAssertEqual(queue.metrics.cancelled, 7)
        XCTAssertEqual(queue.metrics.pending, 0)
        await assertEventually("no slot is held") { queue.metrics.running == 0 }
    }

    func testBoundedQueueRejectsWithItsOwnError() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        defer { gate.release() }
        server.route("/block") { _ in gate.wait(); return .text("ok") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1, maxPending: 2)
        let running = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        let first = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        _ = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        let error = await assertPocketError(.queueFull) { try queue.enqueue(PocketRequest(url: url(server, "/block"))) }
        XCTAssertTrue(error?.message.contains("2") == true)
        XCTAssertEqual(queue.metrics.rejected, 1)
        first.cancel()
        XCTAssertNoThrow(try queue.enqueue(PocketRequest(url: url(server, "/block"))), "a cancelled request frees its place")
        gate.release()
        _ = try await running.response()
    }

    func testZeroPendingAcceptsOnlyWhatCanStartAtOnce() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        defer { gate.release() }
        server.route("/block") { _ in gate.wait(); return .text("ok") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 2, maxConcurrentPerHost: 1, maxPending: 0)
        let first = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        await assertPocketError(.queueFull) { try queue.enqueue(PocketRequest(url: url(server, "/block"))) }
        let other = try queue.enqueue(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/block"))!))
        XCTAssertEqual(queue.metrics.running, 2, "another host had a free slot")
        gate.release()
        _ = try await first.response()
        _ = try await other.response()
        let again = try queue.enqueue(PocketRequest(url: url(server, "/block")))
        let status = try await again.response().status
        XCTAssertEqual(status, 200, "free again")
    }

    func testMetricsReportDepthAndWait() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        server.route("/block") { _ in gate.wait(); return .text("ok") }
        server.route("/x") { _ in .text("ok") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        let tasks = [try queue.enqueue(PocketRequest(url: url(server, "/block")))]
            + (0..<4).map { _ in try! queue.enqueue(PocketRequest(url: url(server, "/x"))) }
        var m = queue.metrics
        XCTAssertEqual(m.pending, 4)
        XCTAssertEqual(m.running, 1)
        XCTAssertEqual(m.enqueued, 5)
        await assertEventually("the blocker reached the server") { server.requestCount == 1 }
        gate.release()
        for task in tasks { _ = try await task.response() }
        m = queue.metrics
        XCTAssertEqual(m.peakPending, 4)
        XCTAssertEqual(m.started, 5)
        XCTAssertEqual(m.completed, 5)
        XCTAssertGreaterThan(m.maxWait, .zero, "requests behind the blocker waited")
        XCTAssertLessThanOrEqual(m.averageWait, m.maxWait)
    }

    func testQueueEventsReachObserversAndTheClientStream() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/e") { _ in .text("ok") }
        let client = try makeClient()
        let events = client.events()
        let queue = PocketRequestQueue(client: client)
        let task = try queue.enqueue(PocketRequest(url: url(server, "/e")))
        let perTask = Recorder<PocketTaskState>()
        task.observe(states: [.finished]) { perTask.append($0.state) }
        _ = try await task.response()
        var states: [PocketTaskState] = []
        for await event in events where event.taskID == task.id {
            states.append(event.state)
            if event.state == .finished { break }
        }
        XCTAssertEqual(states, [.pending, .running, .finished])
        await assertEventually("the late observer saw the end") { perTask.values == [.finished] }
    }

    func testTenThousandQueuedRequestsKeepMemoryBounded() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.keepsRequestBodies = false
        let gate = Gate()
        defer { gate.release() }
        server.route("/tiny") { _ in gate.wait(); return .text("x") }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 8, maxConcurrentPerHost: 8)
        let request = PocketRequest(url: url(server, "/tiny"))
        // The full count under a sanitizer too: with fewer, the process's
        // fixed growth (a sanitizer's own tables) outweighs the records.
        let count = 10_000
        let before = residentBytes()
        var tasks: [PocketQueuedTask] = []
        tasks.reserveCapacity(count)
        for _ in 0..<count { tasks.append(try queue.enqueue(request)) }
        let queued = residentBytes()
        gate.release()
        XCTAssertEqual(queue.metrics.peakPending, count - 8, "all but the running ones waited")
        // About 2 KiB each in a debug build (19 MiB measured); no task or
        // connection per pending request. A sanitizer's shadow memory and
        // redzones multiply what the process holds.
        let scale = sanitizerMemoryFactor
        XCTAssertLessThan(queued - before, scale * (4 << 10) * count, "\(count) pending requests cost a small record each")
        var ok = 0
        for task in tasks where try await task.response().status == 200 { ok += 1 }
        tasks.removeAll()
        XCTAssertEqual(ok, count)
        XCTAssertEqual(queue.metrics.completed, count)
        XCTAssertLessThanOrEqual(queue.metrics.peakRunning, 8)
        XCTAssertLessThan(residentBytes() - before, scale * (96 << 20))
    }
}

