import Foundation
import Logging
import XCTest
@testable import Pocket
import PocketTestSupport

/// The middleware chain, token refresh and logging against the in-process server.
final class MiddlewareTests: XCTestCase {
    private struct Tracer: PocketMiddleware {
        let name: String
        let log: Recorder<String>
        var retryAnswer: PocketRetryDecision?
        var declared: PocketMiddlewareHooks = .all

        var hooks: PocketMiddlewareHooks { declared }

        func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
            log.append("adapt \(name) #\(context.attempt)")
            var request = request
            request.headers.add(name: "X-Chain", value: name)
            return request
        }
        func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {
            log.append("observe \(name) \((try? outcome.get())?.status ?? 0)")
        }
        func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                   context: PocketMiddlewareContext) async throws -> PocketRetryDecision? {
            log.append("retry \(name)")
            return context.attempt == 1 ? retryAnswer : nil
        }
    }

    /// A request's stored values, without sockets: set, replace, read,
    /// remove, and a removal from a context that stored nothing.
    func testTheContextStoresValuesByKey() {
        let context = PocketMiddlewareContext(fields: TaskFields(taskID: 1, method: .get, url: URL(string: "http://example.com/")!,
                                                                 endpoint: .path, metadata: nil),
                                              clock: nil, started: .zero)
        context["gone"] = nil
        XCTAssertNil(context["gone"])
        context["a"] = 1
        context["b"] = "two"
        context["a"] = 3
        XCTAssertEqual(context["a"] as? Int, 3)
        XCTAssertEqual(context["b"] as? String, "two")
        context["a"] = nil
        XCTAssertNil(context["a"])
        XCTAssertEqual(context["b"] as? String, "two")
        context["a"] = 4
        XCTAssertEqual(context["a"] as? Int, 4)
    }

    /// The object a package middleware keeps for an attempt: kept,
    /// replaced (the old one released), taken once, and released with the
    /// context when never taken.
    func testTheContextKeepsOneAttemptObjectAndReleasesIt() {
        final class Probe: Sendable {}
        func context() -> PocketMiddlewareContext {
            PocketMiddlewareContext(fields: TaskFields(taskID: 1, method: .get, url: URL(string: "http://example.com/")!,
                                                       endpoint: .path, metadata: nil),
                                    clock: nil, started: .zero)
        }
        let first = context()
        XCTAssertFalse(first.keepsAttemptObject)
        XCTAssertNil(first.takeAttemptObject())
        weak var replaced: Probe?
        var kept: Probe? = Probe()
        do {
            let old = Probe()
            replaced = old
            first.keepAttemptObject(old)
        }
        XCTAssertNotNil(replaced, "kept: the context holds it")
        first.keepAttemptObject(kept!)
        XCTAssertNil(replaced, "replaced: released")
        XCTAssertTrue(first.keepsAttemptObject)
        XCTAssertTrue(first.takeAttemptObject() === kept)
        XCTAssertFalse(first.keepsAttemptObject, "taken once")
        XCTAssertNil(first.takeAttemptObject())

        weak var left: Probe?
        do {
            let second = context()
            second.keepAttemptObject(kept!)
            left = kept
            kept = nil
        }
        XCTAssertNil(left, "released with the context that was never asked for it")
    }

    func testHooksRunInOrderAdaptForwardObserveBackward() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("ok") }
        let log = Recorder<String>()
        let client = try clientWith {
            $0.middleware = [Tracer(name: "A", log: log), Tracer(name: "B", log: log)]
        }
        _ = try await client.send(PocketRequest(url: url(server, "/x")), options: PocketSendOptions(middleware: [Tracer(name: "C", log: log)]))
        XCTAssertEqual(log.values, ["adapt A #1", "adapt B #1", "adapt C #1", "observe C 200", "observe B 200", "observe A 200"],
                       "a success is never offered to the retry hooks")
        XCTAssertEqual(server.receivedRequests.last?.headerValues("X-Chain"), ["A", "B", "C"], "each adaptation reached the wire")
    }

    func testFirstRetryOpinionWinsAndHooksRunPerAttempt() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("busy", status: 503) }
        let log = Recorder<String>()
        let client = try clientWith {
            $0.middleware = [Tracer(name: "A", log: log), Tracer(name: "B", log: log, retryAnswer: .retryAfter(.zero))]
        }
        _ = try await client.send(PocketRequest(url: url(server, "/x")))
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertEqual(log.values, ["adapt A #1", "adapt B #1", "observe B 503", "observe A 503", "retry A", "retry B",
                                    "adapt A #2", "adapt B #2", "observe B 503", "observe A 503", "retry A", "retry B"])
        XCTAssertEqual(server.receivedRequests.last?.headerValues("X-Chain"), ["A", "B"], "each attempt adapts the original request")
    }

    func testOnlyTheDeclaredHooksAreCalled() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("busy", status: 503) }
        let log = Recorder<String>()
        let client = try clientWith {
            $0.middleware = [Tracer(name: "A", log: log, declared: .observe),
                             Tracer(name: "B", log: log, retryAnswer: .retryAfter(.zero), declared: [.adapt, .retry]),
                             Tracer(name: "C", log: log, retryAnswer: .retry, declared: [])]
        }
        _ = try await client.send(PocketRequest(url: url(server, "/x")))
        XCTAssertEqual(server.requestCount, 2, "B's retry was asked and answered")
        XCTAssertEqual(log.values, ["adapt B #1", "observe A 503", "retry B", "adapt B #2", "observe A 503", "retry B"])
        XCTAssertEqual(server.receivedRequests.last?.headerValues("X-Chain"), ["B"], "only B adapted the request")

        // A middleware with no hooks is not in the chain at all: a success
        // with nothing observing it is returned as it came.
        server.route("/ok") { _ in .text("ok") }
        let none = try clientWith { $0.middleware = [Tracer(name: "N", log: log, declared: [])] }
        let before = log.values.count
        let response = try await none.send(PocketRequest(url: url(server, "/ok")))
        XCTAssertEqual(response.text, "ok")
        XCTAssertEqual(log.values.count, before, "no hook of N ran")
        XCTAssertEqual(server.receivedRequests.last?.headerValues("X-Chain"), [])

        XCTAssertEqual(PocketRetryPolicy().hooks, .retry)
        XCTAssertEqual(PocketClosureMiddleware(observe: { _, _, _ in }).hooks, .observe)
        XCTAssertEqual(PocketClosureMiddleware(adapt: { r, _ in r }, retry: { _, _, _ in nil }).hooks, [.adapt, .retry])
        XCTAssertEqual(PocketLoggingMiddleware(logger: Logger(label: "x")).hooks, .observe)
    }

    func testContextReportsEachAttemptAndKeepsValuesAcrossAttempts() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let served = Recorder<Int>()
        server.route("/x") { _ in
            served.append(1)
            return served.values.count == 1 ? .text("busy", status: 503) : .text("ok")
        }
        let log = Recorder<String>()
        let client = try clientWith {
            $0.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero))
            $0.middleware = [PocketClosureMiddleware(adapt: { request, context in
                context["adapted"] = ((context["adapted"] as? Int) ?? 0) + 1
                XCTAssertNil(context.validationFailure, "a new attempt starts with no failure")
                XCTAssertEqual(context.attemptElapsed, .zero, "a new attempt has taken no time yet")
                return request
            }, observe: { _, _, context in
                log.append("#\(context.attempt) adapted \(context["adapted"] as? Int ?? 0) "
                           + "failure \(context.validationFailure.map { "\($0.code)" } ?? "none") "
                           + "timed \(context.attemptElapsed > .zero)")
            })]
        }
        var request = PocketRequest(url: url(server, "/x"))
        request.validation = .status([200..<300])
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(log.values, ["#1 adapted 1 failure unacceptable_status timed true",
                                    "#2 adapted 2 failure none timed true"])
    }

    func testMiddlewareThatKeepsRetryingIsStopped() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("busy", status: 503) }
        let client = try clientWith {
            $0.retry = PocketRetryPolicy(maxAttempts: 4, backoff: .fixed(.zero))
            $0.middleware = [PocketClosureMiddleware(retry: { _, _, _ in .retryAfter(.zero) })]
        }
        await assertPocketError(.tooManyAttempts) { try await client.send(PocketRequest(url: url(server, "/x"))) }
        XCTAssertEqual(server.requestCount, 4)
    }

    func testAdaptErrorsFailTheRequestWithTheirOwnError() async throws {
        struct NoKey: Error {}
        let server = try TestServer()
        defer { server.shutdown() }
        let client = try clientWith { $0.middleware = [PocketClosureMiddleware(adapt: { _, _ in throw NoKey() })] }
        do {
            _ = try await client.send(PocketRequest(url: url(server, "/x")))
            XCTFail("expected NoKey")
        } catch is NoKey {}
        XCTAssertEqual(server.requestCount, 0)
    }

    func testSingleFlightRefreshUnder50Concurrent401s() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gauge = InFlightGauge()
        server.routeCountingInFlight("/me", gauge: gauge) { request in
            if request.header("Authorization") == "Bearer fresh" { return .text("hello") }
            // Hold the stale-token requests until all 50 are here, so they all see 401 together.
            // (`peak`, not `current`: the first to wake leaves at once.)
            gauge.wait(timeout: 5) { (c: InFlightGauge.Counts) in c.peak >= 50 }
            return .text("expired", status: 401)
        }
        let refreshes = Recorder<String?>()
        let auth = PocketTokenRefreshMiddleware(token: "stale") { rejected in
            refreshes.append(rejected)
            try await Task.sleep(for: .milliseconds(20))
            return "fresh"
        }
        let client = try clientWith { $0.middleware = [auth] }
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await client.send(PocketRequest(url: url(server, "/me"))).text } }
            for try await text in group { XCTAssertEqual(text, "hello") }
        }
        XCTAssertEqual(refreshes.values, ["stale"], "one refresh for all 50 waiters")
        XCTAssertEqual(auth.refreshCount, 1)
        XCTAssertEqual(gauge.peak, 50)
        XCTAssertEqual(server.requestCount, 100, "each request: one 401, one retry")
    }

    func testRefreshLoopGuardReturnsTheSecond401() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/me") { _ in .text("no", status: 401) }
        let counter = Recorder<Int>()
        let auth = PocketTokenRefreshMiddleware(token: "t0") { _ in
            counter.append(1)
            return "t\(counter.values.count)"
        }
        let client = try clientWith { $0.middleware = [auth] }
        let response = try await client.send(PocketRequest(url: url(server, "/me")))
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(server.requestCount, 2, "one refresh-and-retry per request")
        XCTAssertEqual(server.receivedRequests.map { $0.header("Authorization") }, ["Bearer t0", "Bearer t1"])
        XCTAssertEqual(auth.refreshCount, 1)
    }

    func testRefreshThatReturnsTheRejectedTokenIsALoop() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/me") { _ in .text("no", status: 401) }
        let client = try clientWith { $0.middleware = [PocketTokenRefreshMiddleware(token: "same") { _ in "same" }] }
        await assertPocketError(.tokenRefreshLoop) { try await client.send(PocketRequest(url: url(server, "/me"))) }
    }

    func testRefreshRequestThroughTheSameClientDoesNotRecurse() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/me") { _ in .text("no", status: 401) }
        server.route("/token") { _ in .text("also no", status: 401) }
        let box = WeakClient()
        let auth = PocketTokenRefreshMiddleware(token: "old") { _ in
            let response = try await box.client!.send(PocketRequest(url: url(server, "/token")))
            guard response.status == 200 else { throw PocketError(.unknown, "token endpoint said \(response.status)") }
            return response.text
        }
        let client = try clientWith { $0.middleware = [auth] }
        box.client = client
        let error = await assertPocketError(.tokenRefreshFailed) { try await client.send(PocketRequest(url: url(server, "/me"))) }
        XCTAssertTrue(error?.message.contains("401") == true)
        XCTAssertEqual(server.receivedRequests.map(\.path), ["/me", "/token"])
        XCTAssertNil(server.receivedRequests[1].header("Authorization"), "the refresh call is not given the stale token")
    }

    func testTokenIsFetchedBeforeTheFirstRequest() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/me") { request in .text(request.header("Authorization") ?? "none") }
        let client = try clientWith { $0.middleware = [PocketTokenRefreshMiddleware { rejected in rejected == nil ? "first" : "again" }] }
        let text = try await client.send(PocketRequest(url: url(server, "/me"))).text
        XCTAssertEqual(text, "Bearer first")
    }

    func testLoggingMiddlewareRedactsCredentialsAndTruncatesBodies() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/login") { _ in .text(String(repeating: "r", count: 5000), headers: [("Set-Cookie", "session=SECRET3")]) }
        let records = Recorder<CapturedLog>()
        var logger = Logger(label: "test") { _ in CapturingLogHandler(records: records) }
        logger.logLevel = .debug
        let client = try clientWith { $0.middleware = [PocketLoggingMiddleware(logger: logger, maxBodyBytes: 16)] }
        var request = PocketRequest(method: .post, url: URL(string: server.url("/login"))!)
        request.headers["Authorization"] = "Bearer SECRET1"
        request.headers["Cookie"] = "id=SECRET2"
        request.headers["X-Visible"] = "shown"
        request.body = .text(String(repeating: "q", count: 100))
        _ = try await client.send(request)
        let record = try XCTUnwrap(records.values.first)
        XCTAssertEqual(records.values.count, 1)
        XCTAssertEqual(record.level, .info)
        XCTAssertTrue(record.message.hasPrefix("POST \(server.url("/login")) -> 200 ("), record.message)
        XCTAssertTrue(record.message.hasSuffix(" ms)"), record.message)
        let all = record.message + " " + record.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        for secret in ["SECRET1", "SECRET2", "SECRET3"] { XCTAssertFalse(all.contains(secret), "\(secret) leaked: \(all)") }
        XCTAssertTrue(all.contains("Authorization: <redacted>"))
        XCTAssertTrue(all.contains("Set-Cookie: <redacted>"))
        XCTAssertTrue(all.contains("X-Visible: shown"))
        XCTAssertEqual(record.metadata["request.body"], "\(String(repeating: "q", count: 16))… (84 more bytes)")
        XCTAssertEqual(record.metadata["response.body"], "\(String(repeating: "r", count: 16))… (4984 more bytes)")
        XCTAssertEqual(record.metadata["status"], "200")
        XCTAssertNotNil(record.metadata["ms"])
        XCTAssertTrue(record.metadata["timings"]?.contains("first byte") == true)
    }

    func testLoggingAtInfoOmitsHeadersAndBodiesAndLogsFailures() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/reset") { _ in .reset }
        let records = Recorder<CapturedLog>()
        var logger = Logger(label: "test") { _ in CapturingLogHandler(records: records) }
        logger.logLevel = .info
        let client = try clientWith { $0.middleware = [PocketLoggingMiddleware(logger: logger)] }
        _ = try? await client.send(PocketRequest(url: URL(string: "http://user:PASSWORD@127.0.0.1:\(server.port)/reset")!))
        let record = try XCTUnwrap(records.values.last)
        XCTAssertEqual(record.level, .warning)
        XCTAssertTrue(record.message.contains("failed: connection_reset"), record.message)
        XCTAssertFalse(record.message.contains("PASSWORD"), record.message)
        XCTAssertNil(record.metadata["request.headers"])
        XCTAssertNil(record.metadata["response.body"])
        // Below the logger's level nothing is logged.
        var quiet = Logger(label: "quiet") { _ in CapturingLogHandler(records: records) }
        quiet.logLevel = .error
        let before = records.values.count
        let silent = try clientWith { $0.middleware = [PocketLoggingMiddleware(logger: quiet)] }
        _ = try? await silent.send(PocketRequest(url: url(server, "/reset")))
        XCTAssertEqual(records.values.count, before)
    }

    func testScopedClientsShareTheirParentsPipeline() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/s") { request in .text(request.header("X-Scope") ?? "-") }
        let log = Recorder<String>()
        let client = try clientWith { $0.middleware = [Tracer(name: "A", log: log)] }
        let scoped = try client.scoped(headers: ["X-Scope": "inner"])
        let finished = Recorder<Int>()
        client.addObserver(endpoint: "/s", states: [.finished]) { finished.append($0.status ?? 0) }
        let text = try await scoped.send(PocketRequest(url: url(server, "/s"))).text
        XCTAssertEqual(text, "inner")
        XCTAssertEqual(log.values.first, "adapt A #1", "the parent's middleware ran")
        XCTAssertEqual(finished.values, [200], "the parent's observers heard the scoped request")
    }

    func testThePlainPathReturnsWhenListenersLeave() async throws {
        let client = try makeClient()
        XCTAssertFalse(client.hub.isListening)
        var events: PocketTaskEvents? = client.events()
        let token = client.addObserver(endpoint: "/x") { _ in }
        XCTAssertTrue(client.hub.isListening)
        client.removeObserver(token)
        XCTAssertNotNil(events)
        events = nil
        XCTAssertFalse(client.hub.isListening, "a dropped subscription no longer listens")
    }

    func testASubscriptionHearsTheRequestsThatStartAfterIt() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/a") { _ in .text("a") }
        server.route("/b") { _ in .text("b") }
        // The middleware subscribes while the first request is in flight
        // (after its `.running`, before its `.finished`).
        let late = Lock<PocketTaskEvents?>(nil)
        let clientBox = Lock<PocketClient?>(nil)
        let client = try clientWith {
            $0.middleware = [PocketClosureMiddleware(adapt: { request, _ in
                if request.url.path == "/a", let client = clientBox.withLock({ $0 }) {
                    late.withLock { $0 = client.events() }
                }
                return request
            })]
        }
        clientBox.withLock { $0 = client }
        let early = client.events()
        _ = try await client.send(PocketRequest(url: url(server, "/a")))
        _ = try await client.send(PocketRequest(url: url(server, "/b")))
        clientBox.withLock { $0 = nil }
        var earlySeen: [String] = []
        for await event in early {
            earlySeen.append("\(event.endpoint) \(event.state)")
            if earlySeen.count == 4 { break }
        }
        XCTAssertEqual(earlySeen, ["/a running", "/a finished", "/b running", "/b finished"])
        let lateEvents = try XCTUnwrap(late.withLock { $0 })
        var lateSeen: [String] = []
        for await event in lateEvents {
            lateSeen.append("\(event.endpoint) \(event.state)")
            if lateSeen.count == 2 { break }
        }
        XCTAssertEqual(lateSeen, ["/b running", "/b finished"], "the request in flight when it subscribed is not reported to it")
    }

    func testClientEventsAndEndpointObservers() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/a") { _ in .text("a") }
        server.route("/b") { _ in .text("b") }
        let client = try makeClient()
        XCTAssertFalse(client.hub.isListening, "a plain client has no listener")
        let first = Recorder<PocketTaskEvent>(), second = Recorder<PocketTaskEvent>(), finishedOnly = Recorder<PocketTaskEvent>()
        let t1 = client.addObserver(endpoint: "/a") { first.append($0) }
        client.addObserver(endpoint: "/a") { second.append($0) }
        client.addObserver(endpoint: "/a", states: [.finished]) { finishedOnly.append($0) }
        XCTAssertTrue(client.hub.isListening)
        let events = client.events()
        _ = try await client.send(PocketRequest(url: url(server, "/a")))
        _ = try await client.send(PocketRequest(url: url(server, "/b")))
        XCTAssertEqual(first.values.map(\.state), [.running, .finished])
        XCTAssertEqual(second.values.map(\.state), [.running, .finished])
        XCTAssertEqual(finishedOnly.values.map(\.status), [200])
        var seen: [String] = []
        for await event in events {
            seen.append("\(event.endpoint) \(event.state)")
            if seen.count == 4 { break }
        }
        XCTAssertEqual(seen, ["/a running", "/a finished", "/b running", "/b finished"])
        client.removeObserver(t1)
        _ = try await client.send(PocketRequest(url: url(server, "/a")))
        XCTAssertEqual(first.values.count, 2, "a removed observer hears nothing more")
        XCTAssertEqual(second.values.count, 4)

        // The events of one task share what identifies it; a copy changed
        // by its holder changes alone.
        let running = first.values[0], finished = first.values[1]
        XCTAssertEqual(running.taskID, finished.taskID)
        XCTAssertEqual(running.url, finished.url)
        var changed = running
        changed.endpoint = "/elsewhere"
        changed.taskID = 99
        changed.metadata = "mine"
        changed.method = .post
        XCTAssertEqual([changed.endpoint, "\(changed.taskID)", changed.metadata as? String, changed.method.rawValue],
                       ["/elsewhere", "99", "mine", "POST"])
        XCTAssertEqual(changed.url, running.url)
        XCTAssertEqual([running.endpoint, finished.endpoint, running.method.rawValue], ["/a", "/a", "GET"])
        XCTAssertNil(running.metadata)
        XCTAssertEqual(running.taskID, finished.taskID)
    }
}

struct CapturedLog: Sendable {
    var level: Logger.Level
    var message: String
    var metadata: [String: String]
}

/// A swift-log handler that keeps every record.
struct CapturingLogHandler: LogHandler {
    let records: Recorder<CapturedLog>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var flat: [String: String] = [:]
        for (k, v) in event.metadata ?? [:] { flat[k] = "\(v)" }
        records.append(CapturedLog(level: event.level, message: "\(event.message)", metadata: flat))
    }
}
