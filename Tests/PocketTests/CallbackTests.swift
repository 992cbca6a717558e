import Dispatch
import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Calls with several handlers (MTPocket's idiom), where the handlers run,
/// progress, cancellation.
final class CallbackTests: XCTestCase {
    private var server: TestServer!
    private var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        server.route("/ok") { _ in .text("fine") }
        server.route("/missing") { _ in .text("no such thing", status: 404) }
        client = try makeClient()
    }

    override func tearDown() async throws {
        server.shutdown()
        try await client.shutdown()
        // XCTest keeps every test case instance to the end of the run: drop
        // the client so its engine threads are joined now.
        client = nil
        server = nil
    }

    func testSendWithSuccessAndFailureLikeMTPocket() async throws {
        let succeeded = expectation(description: "success")
        client.send(PocketRequest(url: url(server, "/ok")), success: { response in
            XCTAssertEqual(response.text, "fine")
            succeeded.fulfill()
        }, failure: { error, _ in XCTFail("\(error)") })

        let byStatus = expectation(description: "failure by status")
        client.send(PocketRequest(url: url(server, "/missing")), success: { _ in XCTFail("404 is no success") },
                    failure: { error, response in
            XCTAssertEqual(error.code, .unacceptableStatus)
            XCTAssertEqual(error.response?.status, 404)
            XCTAssertEqual(response?.text, "no such thing", "the failure sees the body")
            byStatus.fulfill()
        })

        let refused = expectation(description: "failure without a response")
        let closed = try TestServer()
        let deadURL = url(closed, "/")
        closed.shutdown()
        client.send(PocketRequest(url: deadURL), success: { _ in XCTFail("nobody listens") }, failure: { error, response in
            XCTAssertEqual(error.code, .connectionRefused)
            XCTAssertNil(response)
            refused.fulfill()
        })
        await fulfillment(of: [succeeded, byStatus, refused], timeout: 20)
    }

    func testSeveralHandlersRunCompletionFirstThenInOrder() async throws {
        let order = Recorder<String>()
        let done = expectation(description: "all handlers")
        done.expectedFulfillmentCount = 4
        // A library builds the call and attaches its handlers...
        let call = client.call(PocketRequest(url: url(server, "/ok")))
            .onSuccess { _ in order.append("library success"); done.fulfill() }
            .onComplete { o in order.append("library complete \(o.isSuccess)"); done.fulfill() }
            .onFailure { _, _ in order.append("library failure") }
        // ...and the app attaches its own before starting it.
        call.onSuccess { _ in order.append("app success"); done.fulfill() }
            .onComplete { _ in order.append("app complete"); done.fulfill() }
            .start()
        call.start() // a second start does nothing
        await fulfillment(of: [done], timeout: 10)
        // Attached after the end: runs at once with the outcome.
        let late = expectation(description: "late handler")
        call.onSuccess { r in order.append("late \(r.status)"); late.fulfill() }
        await fulfillment(of: [late], timeout: 10)
        XCTAssertEqual(order.values, ["library complete true", "app complete", "library success", "app success", "late 200"])
        XCTAssertEqual(server.requestCount, 1)

        let failures = Recorder<String>()
        let failed = client.call(PocketRequest(url: url(server, "/missing")))
            .onFailure { e, r in failures.append("first \(r?.status ?? 0)") }
            .onComplete { o in failures.append("complete \(o.isSuccess)") }
            .onSuccess { _ in failures.append("success") }
            .onFailure { _, _ in failures.append("second") }
        await assertPocketError(.unacceptableStatus) { try await failed.response() }
        await assertEventually("the handlers ran") { failures.values.count == 3 }
        XCTAssertEqual(failures.values, ["complete false", "first 404", "second"])
    }

    func testHandlersRunOnTheDispatchQueueAsked() async throws {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "pocket.tests.callbacks")
        queue.setSpecific(key: key, value: "mine")
        let places = Recorder<String>()
        server.route("/big") { _ in .generated(size: 1 << 20) }
        let done = expectation(description: "done")
        client.call(PocketRequest(method: .put, url: url(server, "/big"), body: .bytes(Data(count: 1 << 20))), on: .dispatch(queue))
            .onUploadProgress { _ in places.append("upload " + (DispatchQueue.getSpecific(key: key) ?? "elsewhere")) }
            .onDownloadProgress { _ in places.append("download " + (DispatchQueue.getSpecific(key: key) ?? "elsewhere")) }
            .onComplete { _ in places.append("complete " + (DispatchQueue.getSpecific(key: key) ?? "elsewhere")) }
            .onSuccess { _ in
                places.append("success " + (DispatchQueue.getSpecific(key: key) ?? "elsewhere"))
                done.fulfill()
            }
            .start()
        await fulfillment(of: [done], timeout: 20)
        let seen = places.values
        XCTAssertTrue(seen.allSatisfy { $0.hasSuffix(" mine") }, "\(seen)")
        XCTAssertTrue(seen.contains("upload mine") && seen.contains("download mine"), "\(seen)")
        XCTAssertEqual(seen.suffix(2), ["complete mine", "success mine"], "progress came before the end")
    }

    func testHandlersRunOnTheExecutorAsked() async throws {
        let threads = Recorder<String>()
        let done = expectation(description: "done")
        client.call(PocketRequest(url: url(server, "/ok")), on: .executor(client.executor))
            .onComplete { _ in threads.append(currentThreadName()) }
            .onSuccess { _ in
                threads.append(currentThreadName())
                done.fulfill()
            }
            .start()
        await fulfillment(of: [done], timeout: 10)
        XCTAssertEqual(threads.values.count, 2)
        XCTAssertTrue(threads.values.allSatisfy { $0.hasPrefix("pocket-loop") }, "\(threads.values)")
        XCTAssertFalse(currentThreadName().hasPrefix("pocket-loop"), "the test itself runs elsewhere")
    }

    func testProgressReachesTheTotalsBeforeTheCompletion() async throws {
        server.keepsRequestBodies = false
        server.route("/echo") { r in .generated(size: r.bodyLength) }
        let events = Recorder<String>()
        let uploads = Recorder<PocketTransferProgress>(), downloads = Recorder<PocketTransferProgress>()
        let size = 3 << 20
        let done = expectation(description: "done")
        client.send(PocketRequest(method: .post, url: url(server, "/echo"), body: .bytes(Data(count: size))),
                    success: { response in
                        events.append("success \(response.body.count)")
                        done.fulfill()
                    }, failure: { e, _ in XCTFail("\(e)") },
                    uploadProgress: { p in uploads.append(p); events.append("progress") },
                    downloadProgress: { p in downloads.append(p); events.append("progress") })
        await fulfillment(of: [done], timeout: 20)
        XCTAssertEqual(events.values.last, "success \(size)")
        let up = try XCTUnwrap(uploads.values.last), down = try XCTUnwrap(downloads.values.last)
        XCTAssertTrue(up.isFinal && down.isFinal)
        XCTAssertEqual(up.bytes, size)
        XCTAssertEqual(up.total, size)
        XCTAssertEqual(down.bytes, size)
        XCTAssertEqual(down.percent, 100)
        XCTAssertTrue(uploads.values.allSatisfy { $0.direction == .upload })
        XCTAssertTrue(downloads.values.allSatisfy { $0.direction == .download })
    }

    func testCancelFailsTheCallWithCancelled() async throws {
        server.route("/slow") { _ in .stall(milliseconds: 30_000) }
        let cancelled = expectation(description: "cancelled")
        let call = client.call(PocketRequest(url: url(server, "/slow")))
            .onFailure { error, response in
                XCTAssertEqual(error.code, .cancelled)
                XCTAssertNil(response)
                cancelled.fulfill()
            }
            .onSuccess { _ in XCTFail("it was cancelled") }
            .start()
        await assertEventually("the request reached the server", seconds: 10) { server.requestCount == 1 }
        call.cancel()
        await fulfillment(of: [cancelled], timeout: 10)

        // Cancelled before it started: fails once started, sends nothing.
        let early = client.call(PocketRequest(url: url(server, "/ok")))
        early.cancel()
        await assertPocketError(.cancelled) { try await early.response() }
        XCTAssertEqual(server.requestCount, 1)

        // Cancelling the task that awaits `response()` cancels the call.
        let waited = client.call(PocketRequest(url: url(server, "/slow")))
        let waiting = Task { try await waited.response() }
        await assertEventually("the second slow request arrived", seconds: 10) { server.requestCount == 2 }
        waiting.cancel()
        await assertPocketError(.cancelled) { try await waiting.value }
    }
}

/// The name of the calling thread (Linux: /proc/thread-self/comm).
func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .whitespacesAndNewlines)
}
