import CoreMetrics
import Foundation
import MetricsTestKit
import XCTest
import Pocket
import PocketMetrics
import PocketTestSupport

/// `PocketMetricsMiddleware` and `PocketPoolMetrics` against real requests,
/// read back from `MetricsTestKit`.
final class MetricsTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    func testRequestsErrorsAndTimersAreRecordedByMethodStatusClassAndOrigin() async throws {
        let metrics = TestMetrics()
        server.route("/ok") { _ in .text("fine") }
        server.route("/busy") { _ in .text("later", status: 503) }
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketMetricsMiddleware(factory: metrics)] }
        let origin = "http://127.0.0.1:\(server.port)"

        _ = try await client.send(PocketRequest(url: URL(string: server.url("/ok"))!))
        _ = try await client.send(PocketRequest(url: URL(string: server.url("/ok?page=2"))!))
        let busy = try await client.send(PocketRequest(method: .post, url: URL(string: server.url("/busy"))!, body: .text("x")))
        XCTAssertEqual(busy.status, 503)
        let refusedPort = try closedPort()
        await expectPocketError(.connectionRefused) {
            try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:\(refusedPort)/gone")!))
        }

        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "2xx"), ("origin", origin)]).totalValue, 2,
                       "the query is not a dimension")
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "POST"), ("status_class", "5xx"), ("origin", origin)]).totalValue, 1)
        let refusedOrigin = "http://127.0.0.1:\(refusedPort)"
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "error"), ("origin", refusedOrigin)]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("pocket_client_errors_total",
                                                 [("code", "connection_refused"), ("method", "GET"), ("origin", refusedOrigin)]).totalValue, 1)
        XCTAssertEqual(metrics.counters(label: "pocket_client_errors_total").count, 1, "a 503 is a response, not an error")

        let durations = try metrics.expectTimer("pocket_client_request_duration", [("method", "GET"), ("origin", origin)])
        XCTAssertEqual(durations.values.count, 2)
        XCTAssertTrue(durations.values.allSatisfy { $0 > 0 && $0 < 10_000_000_000 }, "\(durations.values)")
        let ttfb = try metrics.expectTimer("pocket_client_time_to_first_byte", [("method", "GET"), ("origin", origin)])
        XCTAssertEqual(ttfb.values.count, 2)
        for (first, whole) in zip(ttfb.values, durations.values) {
            XCTAssertGreaterThan(first, 0)
            XCTAssertLessThanOrEqual(first, whole, "first byte comes before the attempt ends")
        }
        XCTAssertNil(try? metrics.expectTimer("pocket_client_time_to_first_byte", [("method", "GET"), ("origin", refusedOrigin)]),
                     "no first byte without a response")
    }

    func testEachAttemptIsCounted() async throws {
        let metrics = TestMetrics()
        let calls = CallCounter()
        server.route("/flaky") { _ in calls.next() == 1 ? .text("no", status: 503) : .text("yes") }
        let client = try makeIntegrationClient { config in
            config.handling.middleware = [PocketMetricsMiddleware(factory: metrics)]
            config.handling.retry = PocketRetryPolicy.fixed(maxAttempts: 3, interval: .zero)
        }
        let response = try await client.send(PocketRequest(url: URL(string: server.url("/flaky"))!))
        XCTAssertEqual(response.status, 200)
        let origin = "http://127.0.0.1:\(server.port)"
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "5xx"), ("origin", origin)]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "2xx"), ("origin", origin)]).totalValue, 1)
    }

    func testSeriesAreFoundByMethodAndOriginWhateverTheURL() async throws {
        let metrics = TestMetrics()
        server.route("/item") { _ in .text("item") }
        server.route("/gone") { _ in .text("missing", status: 404) }
        let other = try TestServer()
        addTeardownBlock { other.shutdown() }
        other.route("/item") { _ in .text("elsewhere") }
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketMetricsMiddleware(factory: metrics)] }
        let origin = "http://127.0.0.1:\(server.port)", otherOrigin = "http://127.0.0.1:\(other.port)"

        // More distinct URLs than the middleware remembers (it forgets them
        // all past that), each twice, then other methods, statuses and an origin.
        let distinct = 300 // the middleware remembers 256
        for _ in 0..<2 {
            for i in 0..<distinct {
                let response = try await client.send(PocketRequest(url: URL(string: server.url("/item?id=\(i)"))!))
                XCTAssertEqual(response.status, 200)
            }
        }
        for i in distinct - 3..<distinct { // URLs the middleware has just seen with GET
            _ = try await client.send(PocketRequest(method: .post, url: URL(string: server.url("/item?id=\(i)"))!, body: .text("x")))
        }
        _ = try await client.send(PocketRequest(url: URL(string: server.url("/gone"))!))
        _ = try await client.send(PocketRequest(url: URL(string: other.url("/item?id=1"))!))

        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "2xx"), ("origin", origin)]).totalValue,
                       Int64(2 * distinct))
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "POST"), ("status_class", "2xx"), ("origin", origin)]).totalValue, 3)
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "4xx"), ("origin", origin)]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("pocket_client_requests_total",
                                                 [("method", "GET"), ("status_class", "2xx"), ("origin", otherOrigin)]).totalValue, 1)
        XCTAssertEqual(try metrics.expectTimer("pocket_client_request_duration", [("method", "GET"), ("origin", origin)]).values.count,
                       2 * distinct + 1)
        XCTAssertEqual(try metrics.expectTimer("pocket_client_request_duration", [("method", "POST"), ("origin", origin)]).values.count, 3)
        XCTAssertEqual(metrics.counters(label: "pocket_client_requests_total").count, 4, "one series per method, class and origin")
        XCTAssertEqual(metrics.timers(label: "pocket_client_request_duration").count, 3)
    }

    func testWithNoBackendNothingIsRecordedAndRequestsGoThrough() async throws {
        server.route("/ok") { _ in .text("fine") }
        let silent = PocketMetricsMiddleware(factory: NOOPMetricsHandler.instance)
        XCTAssertFalse(silent.isRecording)
        XCTAssertEqual(silent.hooks, [], "with no backend the chain skips it")
        XCTAssertTrue(PocketMetricsMiddleware(factory: TestMetrics()).isRecording)
        XCTAssertEqual(PocketMetricsMiddleware(factory: TestMetrics()).hooks, .observe)
        let client = try makeIntegrationClient { config in
            config.handling.middleware = [silent]
            config.handling.retry = PocketRetryPolicy.fixed(maxAttempts: 2, interval: .zero)
        }
        let response = try await client.send(PocketRequest(url: URL(string: server.url("/ok"))!))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "fine")
    }

    func testPoolGaugesSampleActiveIdleAndWaiting() async throws {
        let metrics = TestMetrics()
        let release = DispatchSemaphore(value: 0)
        let arrived = CallCounter()
        server.route("/hold") { _ in
            _ = arrived.next()
            _ = release.wait(timeout: .now() + 5)
            return .text("done")
        }
        server.route("/ok") { _ in .text("fine") }
        let client = try makeIntegrationClient { $0.maxConnectionsPerOrigin = 1 }
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        let gauges = PocketPoolMetrics(client: client, queue: queue, factory: metrics)

        _ = try await client.send(PocketRequest(url: URL(string: server.url("/ok"))!))
        gauges.record()
        XCTAssertEqual(try metrics.expectGauge("pocket_client_connections", [("state", "idle")]).lastValue, 1)
        XCTAssertEqual(try metrics.expectGauge("pocket_client_connections", [("state", "active")]).lastValue, 0)
        XCTAssertEqual(try metrics.expectGauge("pocket_client_requests_waiting").lastValue, 0)
        XCTAssertEqual(try metrics.expectGauge("pocket_client_queue_depth").lastValue, 0)

        // One request holds the only connection, a second waits for it, two more wait in the queue.
        let hold = PocketRequest(url: URL(string: server.url("/hold"))!), ok = PocketRequest(url: URL(string: server.url("/ok"))!)
        let holder = Task { try await client.send(hold) }
        let holding = await poll { arrived.count == 1 }
        XCTAssertTrue(holding)
        let waiter = Task { try await client.send(ok) }
        let queued = (0..<3).map { _ in Task { try await queue.send(ok) } }
        let sampled = await poll { () -> Bool in
            gauges.record()
            return (try? metrics.expectGauge("pocket_client_requests_waiting").lastValue) == 2
                && (try? metrics.expectGauge("pocket_client_queue_depth").lastValue) == 2
        }
        XCTAssertTrue(sampled, "waiting \(String(describing: try? metrics.expectGauge("pocket_client_requests_waiting").lastValue)), queue \(String(describing: try? metrics.expectGauge("pocket_client_queue_depth").lastValue))")
        XCTAssertEqual(try metrics.expectGauge("pocket_client_connections", [("state", "active")]).lastValue, 1)
        XCTAssertEqual(try metrics.expectGauge("pocket_client_connections", [("state", "idle")]).lastValue, 0)
        release.signal()
        _ = try await holder.value
        _ = try await waiter.value
        for task in queued { _ = try await task.value }
        gauges.record()
        XCTAssertEqual(try metrics.expectGauge("pocket_client_requests_waiting").lastValue, 0)
        XCTAssertEqual(try metrics.expectGauge("pocket_client_queue_depth").lastValue, 0)
    }
}

/// A thread-safe call counter for handlers.
final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    /// Calls so far.
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
    /// 1 for the first call, then 2, …
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
func poll(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// A loopback port nothing listens on (bound, then closed).
func closedPort() throws -> Int {
    let server = try TestServer()
    let port = server.port
    server.shutdown()
    return port
}
