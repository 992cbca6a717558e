import Foundation
import InMemoryTracing
import Tracing
import XCTest
import Pocket
import PocketTestSupport
import PocketTracing

/// `PocketTracingMiddleware` against real requests: spans read back from
/// `InMemoryTracing`, the propagated context read at the server.
final class TracingTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    func testOneClientSpanWithTheHTTPConventionsAndTraceparentAtTheServer() async throws {
        let tracer = W3CInMemoryTracer()
        server.route("/items") { _ in .text("ok", headers: [("Content-Type", "text/plain")]) }
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketTracingMiddleware(tracer: tracer)] }
        let target = "http://user:secret@127.0.0.1:\(server.port)/items?page=2"
        let response = try await client.send(PocketRequest(url: URL(string: target)!))
        XCTAssertEqual(response.status, 200)

        let spans = tracer.memory.finishedSpans
        XCTAssertEqual(spans.count, 1)
        let span = try XCTUnwrap(spans.first)
        XCTAssertEqual(span.operationName, "GET")
        XCTAssertEqual(span.kind, .client)
        XCTAssertEqual(span.attributes.get("http.request.method"), .string("GET"))
        XCTAssertEqual(span.attributes.get("url.full"), .string("http://127.0.0.1:\(server.port)/items?page=2"),
                       "credentials removed")
        XCTAssertEqual(span.attributes.get("server.address"), .string("127.0.0.1"))
        XCTAssertEqual(span.attributes.get("server.port"), .int64(Int64(server.port)))
        XCTAssertEqual(span.attributes.get("http.response.status_code"), .int64(200))
        XCTAssertEqual(span.attributes.get("network.protocol.version"), .string("1.1"))
        XCTAssertEqual(span.attributes.get("network.peer.address"), .string("127.0.0.1"))
        XCTAssertEqual(span.attributes.get("network.peer.port"), .int64(Int64(server.port)))
        XCTAssertNil(span.attributes.get("http.request.resend_count"))
        XCTAssertNil(span.attributes.get("error.type"))
        XCTAssertNil(span.status)

        let seen = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(seen.header("traceparent"), "00-\(span.traceID)-\(span.spanID)-01")
        XCTAssertEqual(seen.headerValues("traceparent").count, 1)

        // A new connection: connect and first byte, in order, inside the span.
        let names = span.events.map(\.name)
        XCTAssertEqual(names, ["connect", "first_byte"], "numeric host: no DNS; plain HTTP: no TLS")
        let start = span.startInstant.nanosecondsSinceEpoch, end = span.endInstant.nanosecondsSinceEpoch
        let times = span.events.map(\.nanosecondsSinceEpoch)
        XCTAssertEqual(times, times.sorted())
        XCTAssertTrue(times.allSatisfy { $0 >= start && $0 <= end }, "\(start) \(times) \(end)")

        // A reused connection has no connect event.
        _ = try await client.send(PocketRequest(url: URL(string: server.url("/items"))!))
        XCTAssertEqual(tracer.memory.finishedSpans.last?.events.map(\.name), ["first_byte"])
    }

    func testEachAttemptIsAChildSpanOfTheCallersContextWithItsResendCount() async throws {
        let tracer = W3CInMemoryTracer()
        let calls = CallCounter()
        server.route("/flaky") { _ in calls.next() == 1 ? .text("busy", status: 503) : .text("ok") }
        let client = try makeIntegrationClient { config in
            config.handling.middleware = [PocketTracingMiddleware(tracer: tracer, recordsQuery: false)]
            config.handling.retry = PocketRetryPolicy.fixed(maxAttempts: 3, interval: .zero)
        }
        let parent = tracer.startSpan("handler", ofKind: .server)
        let response = try await ServiceContext.withValue(parent.context) {
            try await client.send(PocketRequest(url: URL(string: server.url("/flaky?token=abc"))!))
        }
        parent.end()
        XCTAssertEqual(response.status, 200)

        let spans = tracer.memory.finishedSpans.filter { $0.operationName == "GET" }
        XCTAssertEqual(spans.count, 2)
        let parentID = parent.context.inMemorySpanContext?.spanID
        for span in spans {
            XCTAssertEqual(span.traceID, parent.context.inMemorySpanContext?.traceID)
            XCTAssertEqual(span.parentSpanID, parentID)
            XCTAssertEqual(span.attributes.get("url.full"), .string("http://127.0.0.1:\(server.port)/flaky"), "query stripped")
        }
        XCTAssertEqual(spans[0].attributes.get("http.response.status_code"), .int64(503))
        XCTAssertEqual(spans[0].attributes.get("error.type"), .string("503"))
        XCTAssertEqual(spans[0].status?.code, .error)
        XCTAssertNil(spans[0].attributes.get("http.request.resend_count"))
        XCTAssertEqual(spans[1].attributes.get("http.request.resend_count"), .int64(1))
        XCTAssertEqual(spans[1].attributes.get("http.response.status_code"), .int64(200))
        XCTAssertNil(spans[1].status)

        let sent = server.receivedRequests.map { $0.header("traceparent") }
        XCTAssertEqual(sent, spans.map { "00-\($0.traceID)-\($0.spanID)-01" }, "each attempt carries its own span")
    }

    func testAnAttemptThroughAReplicaSetRecordsTheSetsNameAndTheReplicaItWentTo() async throws {
        let other = try TestServer()
        defer { other.shutdown() }
        let servers: [TestServer] = [server, other]
        for replica in servers {
            let port = replica.port
            replica.route("/x") { _ in .text("\(port)") }
        }
        let set = PocketReplicaSet(name: "svc", endpoints: servers.map { PocketReplicaEndpoint(host: $0.host, port: UInt16($0.port)) },
                                   balancing: .roundRobin)
        let tracer = W3CInMemoryTracer()
        let client = try makeIntegrationClient {
            $0.replicaSets = [set]
            $0.handling.middleware = [PocketTracingMiddleware(tracer: tracer)]
        }
        var answered: [Int64] = []
        for _ in 0..<4 {
            let response = try await client.send(PocketRequest(url: URL(string: "http://svc/x")!))
            answered.append(try XCTUnwrap(Int64(response.text)))
        }
        XCTAssertEqual(Set(answered), Set(servers.map { Int64($0.port) }), "round robin: both replicas")
        let spans = tracer.memory.finishedSpans
        XCTAssertEqual(spans.count, 4)
        for (span, port) in zip(spans, answered) {
            XCTAssertEqual(span.attributes.get("server.address"), .string("svc"), "the URL's host: the set's name")
            XCTAssertEqual(span.attributes.get("server.port"), .int64(80))
            XCTAssertEqual(span.attributes.get("url.full"), .string("http://svc/x"))
            XCTAssertEqual(span.attributes.get("network.peer.address"), .string("127.0.0.1"))
            XCTAssertEqual(span.attributes.get("network.peer.port"), .int64(port), "the replica that answered")
        }
    }

    func testANoOpTracerLeavesTheRequestAlone() async throws {
        server.route("/plain") { request in .text(request.headers.map { $0.0.lowercased() }.sorted().joined(separator: ",")) }
        let traced = try makeIntegrationClient { $0.handling.middleware = [PocketTracingMiddleware(tracer: NoOpTracer())] }
        let plain = try makeIntegrationClient()
        let request = PocketRequest(url: URL(string: server.url("/plain"))!)
        let withTracing = try await traced.send(request)
        let without = try await plain.send(request)
        XCTAssertEqual(withTracing.text, without.text, "the same fields reach the server")
        XCTAssertFalse(withTracing.text.contains("traceparent"))
        XCTAssertEqual(PocketTracingMiddleware(tracer: NoOpTracer()).hooks, [], "the chain skips it")
        XCTAssertEqual(PocketTracingMiddleware().hooks, [.adapt, .observe], "a task-local tracer may come")
    }

    func testWithoutATracerOfItsOwnTheMiddlewareFollowsTheTaskLocalTracer() async throws {
        server.route("/plain") { request in .text(request.header("traceparent") ?? "none") }
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketTracingMiddleware()] }
        let request = PocketRequest(url: URL(string: server.url("/plain"))!)

        // No tracer bootstrapped in the test process: nothing is injected.
        let untraced = try await client.send(request)
        XCTAssertEqual(untraced.text, "none")

        let tracer = W3CInMemoryTracer()
        let traced = try await withTracer(tracer) { try await client.send(request) }
        let span = try XCTUnwrap(tracer.memory.finishedSpans.first)
        XCTAssertEqual(tracer.memory.finishedSpans.count, 1)
        XCTAssertEqual(span.kind, .client)
        XCTAssertEqual(span.attributes.get("http.response.status_code"), .int64(200))
        XCTAssertEqual(traced.text, "00-\(span.traceID)-\(span.spanID)-01", "the scope's tracer injected its context")

        let after = try await client.send(request)
        XCTAssertEqual(after.text, "none", "outside the scope, no tracer again")
        XCTAssertEqual(tracer.memory.finishedSpans.count, 1)
    }

    func testWithoutATracerTheContextsDeadlineStillBoundsTheRequest() async throws {
        // No tracer anywhere, so the middleware starts no span; but the
        // deadline in the task's ServiceContext is its work too, and the
        // request does not take the path of a client without middleware.
        server.route("/slow") { _ in .raw([.sleep(milliseconds: 800), .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]) }
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketTracingMiddleware()] }
        var context = ServiceContext.current ?? .topLevel
        context.pocketDeadline = .now + .milliseconds(150)
        let start = ContinuousClock.now
        do {
            _ = try await ServiceContext.withValue(context) { try await client.send(PocketRequest(url: URL(string: server.url("/slow"))!)) }
            XCTFail("the deadline did not end the request")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .deadlineExceeded)
        }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(600))
        let plain = try await client.send(PocketRequest(url: URL(string: server.url("/slow"))!))
        XCTAssertEqual(plain.text, "ok", "without the deadline the same client waits for the answer")
    }

    func testAFailedAttemptRecordsItsPocketErrorCode() async throws {
        let tracer = W3CInMemoryTracer()
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketTracingMiddleware(tracer: tracer)] }
        let port = try closedPort()
        await expectPocketError(.connectionRefused) {
            try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:\(port)/")!))
        }
        let span = try XCTUnwrap(tracer.memory.finishedSpans.first)
        XCTAssertEqual(span.attributes.get("error.type"), .string("connection_refused"))
        XCTAssertEqual(span.status?.code, .error)
        XCTAssertEqual(span.errors.count, 1)
        XCTAssertEqual((span.errors.first?.error as? PocketError)?.code, .connectionRefused)
        XCTAssertNil(span.attributes.get("http.response.status_code"))
    }

    /// `url.full` drops the fragment and the user and password, and keeps
    /// an `@` outside the authority and a query as they are.
    func testTheRecordedURLLosesOnlyWhatMustGo() async throws {
        let tracer = W3CInMemoryTracer()
        server.route("/a/@me") { _ in .text("ok") }
        let client = try makeIntegrationClient { $0.handling.middleware = [PocketTracingMiddleware(tracer: tracer)] }
        let base = "127.0.0.1:\(server.port)/a/@me?q=1"
        for (sent, recorded) in [("http://\(base)", "http://\(base)"), ("http://\(base)#top", "http://\(base)"),
                                 ("http://u:p@\(base)#top", "http://\(base)"), ("http://u@\(base)", "http://\(base)")] {
            _ = try await client.send(PocketRequest(url: URL(string: sent)!))
            let span = try XCTUnwrap(tracer.memory.finishedSpans.last)
            XCTAssertEqual(span.attributes.get("url.full"), .string(recorded), sent)
        }
    }
}

/// An `InMemoryTracer` whose spans have W3C-sized ids and whose `inject`
/// writes a W3C `traceparent`, the field an OpenTelemetry propagator writes
/// (swift-otel's build is too heavy for this package's tests).
struct W3CInMemoryTracer: Tracer {
    let memory: InMemoryTracer

    init() {
        let ids = HexIDs()
        memory = InMemoryTracer(idGenerator: .init(nextTraceID: { ids.next(bytes: 16) }, nextSpanID: { ids.next(bytes: 8) }))
    }

    func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext,
                                           ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
                                           function: String, file fileID: String, line: UInt) -> InMemorySpan {
        memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Carrier == Extract.Carrier {}
}

/// Distinct lowercase hex ids of a given size.
final class HexIDs: @unchecked Sendable {
    private let lock = NSLock()
    private var counter: UInt64 = 0

    func next(bytes: Int) -> String {
        lock.lock()
        counter += 1
        let n = counter
        lock.unlock()
        let hex = String(n, radix: 16)
        return String(repeating: "0", count: bytes * 2 - hex.count - 1) + "a" + hex
    }
}
