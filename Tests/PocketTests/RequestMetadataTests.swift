import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketRequest.metadata` (AFNetworking's `userInfo`, an STNetTask's own
/// fields) reaches middleware, events, observers, queues and the response.
final class RequestMetadataTests: XCTestCase {
    struct Operation: Sendable, Equatable {
        var name: String
        var order: Int
    }

    /// Collects what each stage saw.
    final class Seen: Sendable {
        let values = Lock<[String: [Operation?]]>([:])
        func add(_ stage: String, _ value: (any Sendable)?) {
            values.withLock { $0[stage, default: []].append(value as? Operation) }
        }
        subscript(stage: String) -> [Operation?] { values.withLock { $0[stage] ?? [] } }
    }

    func testEveryStageSeesTheMetadata() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/orders/7") { _ in .text("ok") }
        let flakyCalls = Lock(0)
        server.route("/flaky") { _ in
            flakyCalls.withLock { n in n += 1; return n } == 1 ? .response(status: 503) : .text("ok")
        }
        let seen = Seen()
        let client = try makeClient { config in
            config.handling.middleware = [PocketClosureMiddleware(adapt: { request, _ in
                seen.add("adapt", request.metadata)
                return request
            }, observe: { _, request, _ in
                seen.add("observe", request.metadata)
            })]
        }
        let events = client.events()
        client.addObserver(endpoint: "/orders/7") { seen.add("observer.\($0.state)", $0.metadata) }
        let checkout = Operation(name: "checkout", order: 7)

        // send
        var request = PocketRequest(url: url(server, "/orders/7"))
        request.metadata = checkout
        let response = try await client.send(request)
        XCTAssertEqual(response.metadata as? Operation, checkout)
        XCTAssertEqual(response.request?.metadata as? Operation, checkout)
        XCTAssertEqual(seen["adapt"], [checkout])
        XCTAssertEqual(seen["observe"], [checkout])
        XCTAssertEqual(seen["observer.running"], [checkout])
        XCTAssertEqual(seen["observer.finished"], [checkout])

        // stream and download
        let streamed = try await client.stream(request)
        _ = try await streamed.body.collect(upTo: 1 << 20)
        XCTAssertEqual(streamed.metadata as? Operation, checkout)
        let file = try temporaryDirectory("metadata").appending(path: "order.txt")
        let downloaded = try await client.download(request, to: file)
        XCTAssertEqual(downloaded.metadata as? Operation, checkout)

        // a queue: the task and its events carry it, pending included
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        let pendingSeen = Seen()
        let task = try queue.enqueue(request, options: PocketSendOptions(observers: [PocketTaskObserver { pendingSeen.add("\($0.state)", $0.metadata) }]))
        XCTAssertEqual(task.metadata as? Operation, checkout)
        let queued = try await task.response()
        XCTAssertEqual(queued.metadata as? Operation, checkout)
        XCTAssertEqual(pendingSeen["pending"], [checkout])
        XCTAssertEqual(pendingSeen["finished"], [checkout])

        // the client's event stream, including a retried attempt
        var flaky = PocketRequest(url: url(server, "/flaky"))
        flaky.metadata = Operation(name: "refund", order: 9)
        let retried = try await client.send(flaky, options: PocketSendOptions(retry: .fixed(maxAttempts: 2, interval: .milliseconds(1))))
        XCTAssertEqual(retried.status, 200)
        var byState: [PocketTaskState: [String]] = [:]
        for await event in events {
            byState[event.state, default: []].append((event.metadata as? Operation)?.name ?? "nil")
            if event.url.path == "/flaky", event.state == .finished { break }
        }
        XCTAssertEqual(byState[.retrying], ["refund"])
        XCTAssertEqual(byState[.finished]?.last, "refund")
        XCTAssertEqual(byState[.running]?.filter { $0 == "nil" }, [], "every task carried its metadata: \(byState)")

        // a callback
        let done = expectation(description: "callback")
        let callbackSeen = Seen()
        client.send(request, success: { response in
            callbackSeen.add("success", response.metadata)
            done.fulfill()
        }, failure: { error, _ in XCTFail("\(error)"); done.fulfill() })
        await fulfillment(of: [done], timeout: 10)
        XCTAssertEqual(callbackSeen["success"], [checkout])
        try await client.shutdown()
    }

    /// Without metadata nothing is carried, and a copy of a request keeps its own.
    func testMetadataIsAValueOfTheRequest() throws {
        var a = PocketRequest(url: URL(string: "http://127.0.0.1/")!)
        XCTAssertNil(a.metadata)
        a.metadata = Operation(name: "a", order: 1)
        var b = a
        b.metadata = ["tenant": "acme"]
        XCTAssertEqual(a.metadata as? Operation, Operation(name: "a", order: 1))
        XCTAssertEqual(b.metadata as? [String: String], ["tenant": "acme"])
        XCTAssertEqual(a, b, "metadata is not compared")
    }
}
