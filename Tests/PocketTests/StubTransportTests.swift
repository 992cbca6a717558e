import Foundation
import XCTest
@testable import Pocket
import PocketTesting

/// The stub transport: canned answers with no network, under the full pipeline.
final class StubTransportTests: XCTestCase {
    private func stubbedClient(_ stub: PocketStubTransport, clock: RecordingClock = RecordingClock(),
                               _ configure: (inout PocketRequestHandling) -> Void = { _ in }) throws -> PocketClient {
        try clientWith {
            $0.transport = stub
            $0.clock = clock
            configure(&$0)
        }
    }

    func testCannedResponsesPerMethodAndPath() async throws {
        let stub = PocketStubTransport()
        stub.stub(.get, "/users/{id}", .json(#"{"id":7}"#))
        stub.stub(.post, "/users", .json(#"{"id":8}"#, status: 201))
        stub.stub(.delete, "/users/7", PocketStubResponse(status: 204, headers: ["X-Deleted": "yes"]))
        let client = try stubbedClient(stub)
        // Port 9 (discard) on a documentation address: nothing listens, nothing is sent.
        let base = "http://192.0.2.1:9"
        let got = try await client.send(try PocketRequest(base + "/users/7"))
        XCTAssertEqual(got.status, 200)
        XCTAssertEqual(got.text, #"{"id":7}"#)
        XCTAssertEqual(got.headers["Content-Type"], "application/json")
        XCTAssertEqual(got.headers["Content-Length"], "8")
        let created = try await client.send(try PocketRequest(method: .post, base + "/users", body: .text("{}")))
        XCTAssertEqual(created.status, 201)
        let deleted = try await client.send(try PocketRequest(method: .delete, base + "/users/7"))
        XCTAssertEqual(deleted.status, 204)
        XCTAssertEqual(deleted.headers["X-Deleted"], "yes")
        XCTAssertEqual(stub.requests.map(\.method), [.get, .post, .delete])
        XCTAssertEqual(stub.requests[1].body?.data, Data("{}".utf8))
        await assertPocketError(.stubNotFound) { try await client.send(try PocketRequest(method: .put, base + "/users/7")) }
        await assertPocketError(.stubNotFound) { try await client.send(try PocketRequest(base + "/users/7/posts")) }
    }

    func testSequencesDelaysAndErrorsDriveRetries() async throws {
        let clock = RecordingClock()
        let stubWithClock = PocketStubTransport(clock: clock)
        stubWithClock.stub(.get, "/flaky", responses: [.status(503, headers: ["Retry-After": "2"]),
                                                       .failure(PocketError(.connectionReset, "stubbed reset"), delay: .milliseconds(300)),
                                                       PocketStubResponse(status: 200, body: Data("finally".utf8), delay: .seconds(1))])
        let client = try stubbedClient(stubWithClock, clock: clock) { $0.retry = PocketRetryPolicy(backoff: .fixed(.milliseconds(50))) }
        let response = try await client.send(try PocketRequest("http://api.test/flaky"))
        XCTAssertEqual(response.text, "finally")
        XCTAssertEqual(response.timings.total, .seconds(1))
        XCTAssertEqual(clock.recordedSleeps, [.seconds(2), .milliseconds(300), .milliseconds(50), .seconds(1)],
                       "Retry-After, the stubbed delay, the backoff, the last stub's delay")
        XCTAssertEqual(stubWithClock.requests.count, 3)
        // The last canned response repeats.
        let again = try await client.send(try PocketRequest("http://api.test/flaky")).text
        XCTAssertEqual(again, "finally")
    }

    func testMiddlewareAndEventsRunOverTheStub() async throws {
        let stub = PocketStubTransport()
        stub.stub(.get, "/me", .status(401))
        let auth = PocketTokenRefreshMiddleware(token: "old") { _ in
            stub.stub(.get, "/me", .text("welcome"))
            return "new"
        }
        let client = try stubbedClient(stub) { $0.middleware = [auth] }
        let events = Recorder<PocketTaskState>()
        let token = client.addObserver(endpoint: "/me") { events.append($0.state) }
        defer { client.removeObserver(token) }
        let text = try await client.send(try PocketRequest("http://api.test/me")).text
        XCTAssertEqual(text, "welcome")
        XCTAssertEqual(stub.requests.map { $0.headers["Authorization"] }, ["Bearer old", "Bearer new"])
        XCTAssertEqual(events.values, [.running, .retrying, .running, .finished])
    }

    func testHeadGetsNoBodyAndCancellationStopsADelay() async throws {
        let stub = PocketStubTransport()
        stub.stub(.head, "/h", .text("ignored"))
        stub.stub(.get, "/slow", PocketStubResponse(status: 200, delay: .seconds(60)))
        let client = try clientWith { $0.transport = stub }
        let head = try await client.send(try PocketRequest(method: .head, "http://api.test/h"))
        XCTAssertEqual(head.body.count, 0)
        XCTAssertEqual(head.headers["Content-Length"], "7")
        let task = Task { try await client.send(try PocketRequest("http://api.test/slow")) }
        await assertEventually("the request reached the stub") { stub.requests.count == 2 }
        task.cancel()
        await assertPocketError(.cancelled) { try await task.value }
    }
}
