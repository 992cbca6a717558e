import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Middleware that say per request whether they have work
/// (`PocketRequestGate`): the chain's rule without sockets, then a request
/// none of them engages, and one they do, through the in-process server.
final class RequestGateTests: XCTestCase {
    /// Adds `X-Gated` in `adapt` and counts its hooks; engages while `on`.
    private final class Gated: PocketRequestGate, @unchecked Sendable {
        let on: Lock<Bool>
        let calls = Lock(0)
        var declared: PocketMiddlewareHooks = [.adapt, .observe]
        init(on: Bool) { self.on = Lock(on) }

        var hooks: PocketMiddlewareHooks { declared }
        func engages(_ request: PocketRequest) -> Bool { on.withLock { $0 } }
        func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
            calls.withLock { $0 += 1 }
            var request = request
            request.headers["X-Gated"] = "yes"
            return request
        }
        func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {
            calls.withLock { $0 += 1 }
        }
    }

    private let request = PocketRequest(url: URL(string: "http://example.invalid/")!)

    func testAChainOfGatesEngagesWhenOneOfThemDoes() {
        let off = Gated(on: false), on = Gated(on: true)
        XCTAssertEqual(MiddlewareChain([off], policy: nil).requestGates?.count, 1)
        XCTAssertFalse(MiddlewareChain([off], policy: nil).engages(request))
        XCTAssertFalse(MiddlewareChain([off, Gated(on: false)], policy: nil).engages(request))
        XCTAssertTrue(MiddlewareChain([off, on], policy: nil).engages(request))
        off.on.withLock { $0 = true }
        XCTAssertTrue(MiddlewareChain([off], policy: nil).engages(request), "asked per request, not once")
    }

    func testAMiddlewareThatCannotTellOrRetriesEngagesEveryRequest() {
        let off = Gated(on: false)
        let observer = PocketClosureMiddleware(observe: { _, _, _ in })
        XCTAssertNil(MiddlewareChain([off, observer], policy: nil).requestGates, "a closure's observe always has work")
        XCTAssertTrue(MiddlewareChain([off, observer], policy: nil).engages(request))
        XCTAssertNil(MiddlewareChain([off], policy: PocketRetryPolicy()).requestGates, "a retry policy decides after each attempt")
        let retrying = Gated(on: false)
        retrying.declared = [.adapt, .retry]
        XCTAssertNil(MiddlewareChain([retrying], policy: nil).requestGates)
        XCTAssertTrue(MiddlewareChain([], policy: nil).engages(request), "no chain: the client's own rule (unadapted) applies")
        // A middleware with no hook is skipped by the chain and does not
        // keep the others' gates from deciding.
        XCTAssertFalse(MiddlewareChain([off, PocketClosureMiddleware()], policy: nil).engages(request))
    }

    func testARequestNoGateEngagesIsSentWithoutItsHooks() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { request in .text(request.header("X-Gated") ?? "none") }
        let gated = Gated(on: false)
        let client = try makeClient { $0.handling.middleware = [gated] }
        XCTAssertTrue(client.gatedOnly)
        let first = try await client.send(PocketRequest(url: url(server, "/x")))
        XCTAssertEqual(first.text, "none")
        XCTAssertEqual(gated.calls.withLock { $0 }, 0, "neither adapt nor observe ran")

        gated.on.withLock { $0 = true }
        let second = try await client.send(PocketRequest(url: url(server, "/x")))
        XCTAssertEqual(second.text, "yes")
        XCTAssertEqual(gated.calls.withLock { $0 }, 2, "adapt and observe ran once each")

        // A retry policy makes every request take the chain: the gate is not asked.
        gated.on.withLock { $0 = false }
        let retrying = try makeClient {
            $0.handling.middleware = [gated]
            $0.handling.retry = PocketRetryPolicy()
        }
        XCTAssertFalse(retrying.gatedOnly)
        let third = try await retrying.send(PocketRequest(url: url(server, "/x")))
        XCTAssertEqual(third.text, "yes")
    }
}
