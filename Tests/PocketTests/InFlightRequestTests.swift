import Foundation
import XCTest
@testable import Pocket

/// `InFlightRequest`'s submit, cancel and finish states, with no socket: the
/// state word on its own, then the object on a client's engine with requests
/// that end before anything is sent (cancelled before the submit, refused by
/// preparation).
final class InFlightRequestTests: XCTestCase {
    typealias State = InFlightRequest.State

    // MARK: the state word

    func testANewRequestIsIdle() {
        let state = State()
        XCTAssertEqual(state.current, State.idle)
        XCTAssertFalse(state.isCancelledEarly)
    }

    func testSubmitMovesIdleToRunning() {
        let state = State()
        XCTAssertTrue(state.publish(), "no cancel came first: nothing to pass on")
        XCTAssertEqual(state.current, State.running)
    }

    func testCancelBeforeSubmitMarksItCancelledEarly() {
        let state = State()
        XCTAssertEqual(state.cancel(), .none, "no engine request exists yet to cancel")
        XCTAssertEqual(state.current, State.cancelledEarly)
        XCTAssertTrue(state.isCancelledEarly, "the submit checks this and refuses the request")
        XCTAssertEqual(state.cancel(), .none, "a second cancel changes nothing")
        XCTAssertEqual(state.current, State.cancelledEarly)
    }

    func testACancelBetweenTheCheckAndTheSubmitIsPassedToTheEngine() {
        let state = State()
        _ = state.cancel()
        XCTAssertFalse(state.publish(), "the engine has the request now: the submitter must cancel it there")
        XCTAssertEqual(state.current, State.cancelledEarly, "the early cancel is not overwritten by running")
    }

    func testCancelWhileRunningCancelsInTheEngine() {
        let state = State()
        _ = state.publish()
        XCTAssertEqual(state.cancel(), .cancelInEngine)
        XCTAssertEqual(state.current, State.running, "the engine's completion, not the cancel, ends it")
        XCTAssertEqual(state.cancel(), .cancelInEngine, "harmless again: the engine ignores a finished handle")
    }

    func testCancelAfterFinishOrResumeDoesNothing() {
        let state = State()
        _ = state.publish()
        state.finish()
        XCTAssertEqual(state.current, State.finished)
        XCTAssertEqual(state.cancel(), .none)
        XCTAssertEqual(state.current, State.finished)
        state.resume()
        XCTAssertEqual(state.current, State.resumed)
        XCTAssertEqual(state.cancel(), .none)
        XCTAssertEqual(state.current, State.resumed)
    }

    func testAFinishBeforeThePublishIsNotTakenForACancel() {
        // The loop can finish a request before its submitter publishes the
        // handle: the submitter then has nothing to cancel.
        let state = State()
        state.finish()
        XCTAssertTrue(state.publish())
        XCTAssertEqual(state.current, State.finished, "a finished request does not become running again")
    }

    func testResetMakesASpareIdleAgain() {
        let state = State()
        _ = state.publish()
        state.finish()
        state.resume()
        state.reset()
        XCTAssertEqual(state.current, State.idle)
        XCTAssertEqual(state.cancel(), .none)
        XCTAssertTrue(state.isCancelledEarly)
    }

    // MARK: the request on an engine, ended before any byte is sent

    func testCancelledBeforeStartEndsCancelledAndReleasesWhatTheEngineWasGiven() async throws {
        let client = try makeClient()
        var inflight = InFlightRequest(engine: client.engine)
        inflight.cancel()
        let request = PocketRequest(url: URL(string: "http://127.0.0.1:9/")!)
        let error = await outcome(of: inflight, request, client)
        XCTAssertEqual(error?.code, .cancelled)
        XCTAssertEqual(client.engine.pendingRequests, 0, "the engine never got the request")
        XCTAssertEqual(client.engine.stats.connections_opened, 0)
        // The context retained for the engine is released when the submit is refused.
        XCTAssertTrue(isKnownUniquelyReferenced(&inflight))
        XCTAssertFalse(inflight.isReusable, "finished early, never resumed by the loop: not a spare")
        try await client.shutdown()
    }

    func testAPreparationFailureEndsItOnceWithThatError() async throws {
        let client = try makeClient()
        var inflight = InFlightRequest(engine: client.engine)
        let request = PocketRequest(url: URL(string: "ftp://example.test/")!)
        let error = await outcome(of: inflight, request, client)
        XCTAssertEqual(error?.code, .unsupportedScheme)
        inflight.cancel() // after the end: ignored (no engine call, no second resume)
        XCTAssertEqual(client.engine.pendingRequests, 0)
        XCTAssertTrue(isKnownUniquelyReferenced(&inflight), "nothing was handed to the engine")
        try await client.shutdown()
    }

    func testANewRequestTakesAnEmptyResponse() throws {
        let client = try makeClient()
        let inflight = InFlightRequest(engine: client.engine)
        guard case .none = inflight.takeResumption() else {
            return XCTFail("nothing finished: there is no continuation to resume")
        }
        let response = inflight.takeResponse()
        XCTAssertEqual(response.status, 0)
        XCTAssertTrue(response.body.isEmpty)
    }

    /// Starts `inflight` and returns the error its continuation was resumed
    /// with (nil: resumed with success, which these requests must not be).
    private func outcome(of inflight: InFlightRequest, _ request: PocketRequest, _ client: PocketClient) async -> PocketError? {
        do {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                inflight.start(request, client: client, continuation: continuation)
            }
            XCTFail("the request ended without an error")
            return nil
        } catch {
            return error as? PocketError
        }
    }
}
