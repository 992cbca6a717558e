import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The one request path: every way of sending runs through middleware,
/// retries, redirects, validation and events, proven through the in-process
/// server. Each way sends to `/flaky`, which answers 503 first (retried by
/// the policy), then 302 to `/final` (followed), which answers JSON; a
/// middleware stamps `X-Path` on every attempt; validation is the client's.
final class RequestPathTests: XCTestCase {
    struct Item: Codable, Sendable, Equatable { var id: Int }

    struct GetFlaky: PocketEndpoint {
        typealias Output = [Item]
        var path: String { "flaky" }
    }

    /// A server for one way of sending, its client and the client's events.
    private struct Fixture {
        let server: TestServer
        let client: PocketClient
        let events: PocketTaskEvents
        let hits: Recorder<String>

        init() throws {
            server = try TestServer()
            let hits = Recorder<String>()
            self.hits = hits
            let flakyHits = Recorder<Int>()
            server.route("/flaky") { request in
                hits.append("flaky")
                flakyHits.append(1)
                if flakyHits.values.count == 1 { return .text("busy", status: 503) }
                return .response(status: 302, headers: [("Location", "/final")], body: [])
            }
            server.route("/final") { _ in
                hits.append("final")
                return .response(status: 200, headers: [("Content-Type", "application/json")], body: Array(#"[{"id":7}]"#.utf8))
            }
            server.route("/missing") { _ in
                hits.append("missing")
                return .response(status: 404, headers: [("Content-Type", "application/json")], body: Array(#"{"error":"no"}"#.utf8))
            }
            let base = URL(string: server.url("/"))!
            client = try makeClient {
                $0.baseURL = base
                $0.validation = PocketValidation()
                $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero))
                $0.handling.middleware = [PocketClosureMiddleware(adapt: { request, context in
                    var request = request
                    request.headers["X-Path"] = "attempt-\(context.attempt)"
                    return request
                })]
            }
            events = client.events()
        }

        /// The states reported for the one task sent, in order.
        func states(count: Int) async -> [PocketTaskState] {
            var seen: [PocketTaskState] = []
            for await event in events {
                seen.append(event.state)
                if seen.count == count { break }
            }
            return seen
        }

        /// What every way must show after sending to `/flaky`.
        func assertWentThroughThePath(_ way: String, file: StaticString = #filePath, line: UInt = #line) async {
            XCTAssertEqual(hits.values, ["flaky", "flaky", "final"], "\(way): retried once, then redirected", file: file, line: line)
            XCTAssertEqual(server.receivedRequests.map { $0.header("X-Path") ?? "-" }, ["attempt-1", "attempt-2", "attempt-2"],
                           "\(way): the middleware adapted every attempt, and the redirect hop kept it", file: file, line: line)
            let states = await self.states(count: 4)
            XCTAssertEqual(states, [.running, .retrying, .running, .finished], "\(way): events", file: file, line: line)
        }

        /// `/missing` fails validation: the error the caller gets is the
        /// `.finished` event's, and a 404 is not retried.
        func assertValidationFailure(_ way: String, _ error: (any Error)?, file: StaticString = #filePath, line: UInt = #line) async {
            XCTAssertEqual((error as? PocketError)?.code, .unacceptableStatus, "\(way): \(String(describing: error))", file: file, line: line)
            XCTAssertEqual(hits.values.filter { $0 == "missing" }.count, 1, "\(way): a 404 is not retried", file: file, line: line)
            var finished: PocketTaskEvent?
            for await event in events where event.state == .finished {
                finished = event
                break
            }
            XCTAssertEqual((finished?.error as? PocketError)?.code, .unacceptableStatus,
                           "\(way): the .finished event carries the validation error", file: file, line: line)
        }

        func request(_ path: String) -> PocketRequest { PocketRequest(url: URL(string: server.url(path))!) }
    }

    private func caught<T>(_ body: () async throws -> T) async -> (any Error)? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }

    func testSend() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let response = try await f.client.send(f.request("/flaky"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.url?.path, "/final")
        XCTAssertEqual(response.request?.headers["X-Path"], "attempt-2", "the response keeps the request as last sent")
        await f.assertWentThroughThePath("send")
        await f.assertValidationFailure("send", await caught { try await f.client.send(f.request("/missing")) })
    }

    func testEndpoint() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let items = try await f.client.send(GetFlaky())
        XCTAssertEqual(items, [Item(id: 7)])
        await f.assertWentThroughThePath("endpoint")
    }

    func testPipe() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let pipeline = PocketPipeline(baseURL: URL(string: f.server.url("/"))!, client: f.client)
        let items = pipeline.pipe(Item.self, name: "flaky")
        let read = try await items.read()
        XCTAssertEqual(read, [Item(id: 7)])
        await f.assertWentThroughThePath("pipe")
    }

    func testQueue() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let queue = PocketRequestQueue(client: f.client, maxConcurrent: 1)
        let response = try await queue.send(f.request("/flaky"))
        XCTAssertEqual(response.status, 200)
        // A queued task reports `.pending` first.
        XCTAssertEqual(hitsAfter(f), ["flaky", "flaky", "final"])
        let states = await f.states(count: 5)
        XCTAssertEqual(states, [.pending, .running, .retrying, .running, .finished])
        await f.assertValidationFailure("queue", await caught { try await queue.send(f.request("/missing")) })
    }

    private func hitsAfter(_ f: Fixture) -> [String] { f.hits.values }

    func testGroup() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let group = PocketRequestGroup<PocketResponse>(mode: .serial, requests: [f.request("/flaky")], client: f.client)
        let outcome = await group.run()
        XCTAssertEqual(outcome.results.first?.value?.status, 200)
        await f.assertWentThroughThePath("group")
    }

    func testCallbacks() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let done = expectation(description: "completion")
        let status = Recorder<Int>()
        f.client.call(f.request("/flaky")).onComplete { outcome in
            status.append(outcome.response?.status ?? 0)
            done.fulfill()
        }.start()
        await fulfillment(of: [done], timeout: 10)
        XCTAssertEqual(status.values, [200])
        await f.assertWentThroughThePath("callbacks")
    }

    func testStream() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let response = try await f.client.stream(f.request("/flaky"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.url?.path, "/final")
        let body = try await response.body.collect(upTo: 1 << 10)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), #"[{"id":7}]"#)
        await f.assertWentThroughThePath("stream")
        await f.assertValidationFailure("stream", await caught { try await f.client.stream(f.request("/missing")) })
    }

    func testDownload() async throws {
        let f = try Fixture()
        defer { f.server.shutdown() }
        let destination = try temporaryDirectory("path").appending(path: "items.json")
        let response = try await f.client.download(f.request("/flaky"), to: destination)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), #"[{"id":7}]"#)
        await f.assertWentThroughThePath("download")
        let missing = try temporaryDirectory("path-missing").appending(path: "missing.json")
        await f.assertValidationFailure("download", await caught { try await f.client.download(f.request("/missing"), to: missing) })
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing.path), "a failed download leaves no file")
    }

    /// A stream that fails before its first byte (the connection closes
    /// before any response) is retried; a body that breaks after the head
    /// is the reader's error, never a retry.
    func testAStreamFailingBeforeItsFirstByteIsRetried() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let hits = Recorder<Int>()
        server.route("/s") { _ in
            hits.append(1)
            if hits.values.count == 1 { return .raw([.close]) } // closed before any byte
            return .text("streamed")
        }
        server.route("/broken") { _ in
            hits.append(2)
            return .closeMidBody(status: 200, declaredLength: 100, sentPrefix: Array(repeating: 0x61, count: 10))
        }
        let client = try makeClient { $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero)) }
        let response = try await client.stream(PocketRequest(url: url(server, "/s")))
        let body = try await response.body.collect(upTo: 1 << 10)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "streamed")
        XCTAssertEqual(hits.values, [1, 1], "the stream that failed before its first byte was sent again")

        let broken = try await client.stream(PocketRequest(url: url(server, "/broken")))
        await assertPocketError(.truncatedBody) { try await broken.body.collect(upTo: 1 << 10) }
        XCTAssertEqual(hits.values.filter { $0 == 2 }.count, 1, "a body already handed over is not retried")
    }

    /// Predicate semantics: a success is never retried, whatever the
    /// predicate says; failures reach it.
    func testASuccessfulPostIsSentExactlyOnceEvenWithARetryAnythingPredicate() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/orders") { _ in .text("created", status: 201) }
        let asked = Recorder<Int>()
        let client = try makeClient {
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 5, backoff: .fixed(.zero), nonIdempotent: .always) { attempt in
                asked.append(attempt.response?.status ?? 0)
                return .retry
            }
        }
        var post = PocketRequest(method: .post, url: url(server, "/orders"))
        post.body = .bytes(Data("{}".utf8))
        let response = try await client.send(post)
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(server.requestCount, 1, "a successful POST is sent exactly once")
        XCTAssertEqual(asked.values, [], "the predicate sees failures only")
    }

    func testA503IsRetriedByTheDefaultRules() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let hits = Recorder<Int>()
        server.route("/x") { _ in
            hits.append(1)
            return hits.values.count < 3 ? .text("busy", status: 503) : .text("ok")
        }
        let client = try makeClient { $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero)) }
        let response = try await client.send(PocketRequest(url: url(server, "/x")))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(server.requestCount, 3)
    }

    func testAResponseFailingValidationIsRetriedOnlyWhenThePolicySaysSo() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("no", status: 404) }
        // Default rules: 404 is not a retryable status, so one attempt, and the caller gets the validation error.
        let plain = try makeClient {
            $0.validation = PocketValidation(statusCodes: [200..<300], contentTypes: ["text/plain"])
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero))
        }
        await assertPocketError(.unacceptableStatus) { try await plain.send(PocketRequest(url: url(server, "/x"))) }
        XCTAssertEqual(server.requestCount, 1)
        // A predicate that retries validation failures: three attempts, the
        // predicate saw the response and the validation error each time.
        let seen = Recorder<String>()
        let eager = try makeClient {
            $0.validation = PocketValidation(statusCodes: [200..<300], contentTypes: ["text/plain"])
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero)) { attempt in
                seen.append("\(attempt.response?.status ?? 0) \(attempt.pocketError?.code.name ?? "-")")
                return .retry
            }
        }
        let error = await assertPocketError(.unacceptableStatus) { try await eager.send(PocketRequest(url: url(server, "/x"))) }
        XCTAssertEqual(server.requestCount, 4)
        XCTAssertEqual(seen.values, ["404 unacceptable_status", "404 unacceptable_status"], "asked after attempts 1 and 2")
        XCTAssertTrue(error?.message.contains("after 3 attempts") ?? false, error?.message ?? "")
        // Without validation, a 404 is still a failure the predicate sees (not 2xx/3xx), and is returned, not thrown.
        let unvalidated = try makeClient {
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero)) { _ in .retry }
        }
        let unvalidatedStatus = try await unvalidated.send(PocketRequest(url: url(server, "/x"))).status
        XCTAssertEqual(unvalidatedStatus, 404)
        XCTAssertEqual(server.requestCount, 6)
    }

    func testTheFinishedEventOfAResponseFailingValidationCarriesTheError() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("boom", status: 500) }
        let client = try makeClient { $0.validation = PocketValidation() }
        let events = client.events()
        await assertPocketError(.unacceptableStatus) { try await client.send(PocketRequest(url: url(server, "/x"))) }
        var finished: PocketTaskEvent?
        for await event in events where event.state == .finished {
            finished = event
            break
        }
        XCTAssertEqual(finished?.status, 500)
        XCTAssertEqual((finished?.error as? PocketError)?.code, .unacceptableStatus)
    }

    /// A task's events share its fields (made once per task), yet each
    /// event is a value: changing one leaves the others. The endpoint key is
    /// the path unless named, in the events and in the middleware's context.
    func testATasksEventsShareItsFieldsAndEachIsAValue() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/orders/7") { _ in .text("ok") }
        let contexts = Recorder<String>()
        let client = try makeClient {
            $0.handling.middleware = [PocketClosureMiddleware(adapt: { request, context in
                contexts.append(context.endpoint)
                return request
            })]
        }
        let events = client.events()
        var request = PocketRequest(url: url(server, "/orders/7?page=2"))
        request.metadata = "checkout"
        _ = try await client.send(request)
        _ = try await client.send(request, options: PocketSendOptions(endpoint: "orders.show"))
        var seen: [PocketTaskEvent] = []
        for await event in events {
            seen.append(event)
            if seen.count == 4 { break }
        }
        XCTAssertEqual(seen.map(\.state), [.running, .finished, .running, .finished])
        XCTAssertEqual(seen.map(\.endpoint), ["/orders/7", "/orders/7", "orders.show", "orders.show"])
        XCTAssertEqual(contexts.values, ["/orders/7", "orders.show"])
        XCTAssertEqual(seen[0].taskID, seen[1].taskID)
        XCTAssertNotEqual(seen[1].taskID, seen[2].taskID)
        XCTAssertEqual(seen.map { $0.metadata as? String }, Array(repeating: "checkout", count: 4))
        XCTAssertEqual(seen[1].status, 200)

        var changed = seen[0]
        changed.url = URL(string: "http://127.0.0.1/elsewhere")!
        changed.endpoint = "renamed"
        changed.taskID = 99
        changed.method = .post
        changed.metadata = nil
        XCTAssertEqual([changed.url.path, changed.endpoint, "\(changed.taskID)", changed.method.rawValue], ["/elsewhere", "renamed", "99", "POST"])
        XCTAssertNil(changed.metadata)
        for event in seen[0...1] {
            XCTAssertEqual(event.url.path, "/orders/7", "a copy's change is its own")
            XCTAssertEqual(event.endpoint, "/orders/7")
            XCTAssertEqual(event.method, .get)
            XCTAssertEqual(event.metadata as? String, "checkout")
        }
        try await client.shutdown()
    }

    /// A subscription that is not read keeps only the newest
    /// `bufferingNewest` events, in order, however many were published.
    func testASlowReaderGetsTheNewestEvents() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("ok") }
        let client = try makeClient()
        let events = client.events(bufferingNewest: 3)
        var taskIDs: [UInt64] = []
        let all = client.events()
        for _ in 0..<7 { _ = try await client.send(PocketRequest(url: url(server, "/x"))) }
        for await event in all where event.state == .finished {
            taskIDs.append(event.taskID)
            if taskIDs.count == 7 { break }
        }
        try await client.shutdown()
        var seen: [(UInt64, PocketTaskState)] = []
        for await event in events { seen.append((event.taskID, event.state)) }
        XCTAssertEqual(seen.map(\.0), [taskIDs[5], taskIDs[6], taskIDs[6]], "the newest three, then the end: \(seen)")
        XCTAssertEqual(seen.map(\.1), [.finished, .running, .finished])
    }

    /// Events read by hand with `next()` and by `for await` in an actor
    /// (which calls `next(isolation:)`) arrive in order, batch after batch,
    /// then nil once the client shut down.
    func testEventsReadByHandAndFromAnActor() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("ok") }
        let client = try makeClient()
        let byHand = client.events()
        let onActor = client.events()
        for _ in 0..<3 { _ = try await client.send(PocketRequest(url: url(server, "/x"))) }
        var iterator = byHand.makeAsyncIterator()
        var states: [PocketTaskState] = []
        for _ in 0..<6 {
            let event = await iterator.next()
            states.append(try XCTUnwrap(event).state)
        }
        XCTAssertEqual(states, [.running, .finished, .running, .finished, .running, .finished])
        _ = try await client.send(PocketRequest(url: url(server, "/x")))   // the next batch
        let running = await iterator.next()
        XCTAssertEqual(running?.state, .running)
        try await client.shutdown()
        let finished = await iterator.next()
        XCTAssertEqual(finished?.state, .finished)
        let end = await iterator.next()
        XCTAssertNil(end, "the subscription ends with the client")
        let counted = await EventCounter().count(onActor)
        XCTAssertEqual(counted, 8, "four requests, two events each, then the end")
    }

    /// The engine's error codes are the Swift codes of the same names: each
    /// name the engine reports has its constant.
    func testEveryEngineErrorNameHasItsCode() {
        let declared: Set<PocketError.Code> = [
            .outOfMemory, .invalidArgument, .invalidMethod, .invalidTarget, .invalidHeaderName, .invalidHeaderValue,
            .invalidHost, .requestHeadTooLarge, .shutdown, .cancelled, .dnsFailure, .connectionRefused,
            .networkUnreachable, .hostUnreachable, .connectFailed, .connectTimeout, .readTimeout, .totalTimeout,
            .connectionReset, .closedBeforeResponse, .writeFailed, .readFailed, .socketFailed, .responseHeadTooLarge,
            .tooManyHeaders, .badStatusLine, .unsupportedVersion, .badHeader, .badContentLength, .conflictingContentLength,
            .transferEncodingWithContentLength, .unsupportedTransferEncoding, .badChunk, .chunkSizeTooLong,
            .chunkExtensionTooLarge, .trailersTooLarge, .tooManyInterimResponses, .unexpectedUpgrade, .truncatedBody,
            .truncatedHead, .bodyTooLarge, .tlsConfiguration, .tlsHandshakeFailed, .tlsUntrustedCertificate,
            .tlsHostnameMismatch, .tlsCertificateExpired, .tlsCertificateNotYetValid, .tlsPinMismatch,
            .tlsProtocolVersion, .tlsAlpnMismatch, .tlsAnsweredByPlainHTTP, .badContentEncoding, .truncatedContentEncoding, .decompressionBomb,
            .decodedBodyTooLarge, .tooManyContentEncodings, .fileWriteFailed, .fileReadFailed, .requestBodyLengthMismatch,
            .threadFailed, .unixSocketNotFound, .unixSocketRefused, .unixSocketPermissionDenied, .unixSocketPathTooLong,
            .tlsAnsweredByPlainHTTP, .proxyAuthenticationRequired, .proxyConnectFailed, .proxyTunnelClosed, .proxyBadResponse,
            .ioUringUnavailable, .tooManyOpenFiles, .tlsAlert,
        ]
        let engine = PocketError.Code.engineCodes
        XCTAssertGreaterThan(engine.count, 50)
        for code in engine { XCTAssertTrue(declared.contains(code), "no constant for the engine's \(code.name)") }
        XCTAssertEqual(PocketError.Code.engine(-16), .connectTimeout, "either sign")
        XCTAssertEqual(PocketError.Code.engine(9999), .unknown)
    }
}

/// Reads a subscription to its end inside an actor.
private actor EventCounter {
    func count(_ events: PocketTaskEvents) async -> Int {
        var n = 0
        for await _ in events { n += 1 }
        return n
    }
}
