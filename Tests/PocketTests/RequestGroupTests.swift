import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Serial and concurrent groups against the in-process server.
final class RequestGroupTests: XCTestCase {
    func testSerialGroupRunsInOrderAndStopsAtTheFirstError() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/ok") { _ in .text("ok") }
        server.route("/reset") { _ in .reset }
        let client = try makeClient()
        let progress = Recorder<PocketGroupProgress>()
        let group = PocketRequestGroup(mode: .serial, requests: [PocketRequest(url: url(server, "/ok?1")), PocketRequest(url: url(server, "/reset")),
                                                           PocketRequest(url: url(server, "/ok?3"))], client: client)
        let outcome = await group.run { progress.append($0) }
        XCTAssertEqual(outcome.results[0].value?.status, 200)
        XCTAssertTrue(outcome.results[1].isFailure)
        guard case .notStarted = outcome.results[2] else { return XCTFail("\(outcome.results[2])") }
        XCTAssertEqual(outcome.completionOrder, [0, 1])
        XCTAssertFalse(outcome.succeeded)
        XCTAssertEqual((outcome.firstError as? PocketError)?.code, .connectionReset)
        // (The engine itself re-sends an idempotent request once when a reused connection resets.)
        XCTAssertEqual(server.receivedRequests.first?.target, "/ok?1")
        XCTAssertFalse(server.receivedRequests.contains { $0.target == "/ok?3" }, "the third request was never sent")
        XCTAssertEqual(progress.values.map(\.finished), [1, 2])
        XCTAssertEqual(progress.values.map(\.total), [3, 3])
    }

    func testSerialGroupOfSuccesses() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/n") { _ in .text("n") }
        let client = try makeClient()
        let requests = (0..<5).map { PocketRequest(url: url(server, "/n?\($0)")) }
        let outcome = await PocketRequestGroup(mode: .serial, requests: requests, client: client).run()
        XCTAssertTrue(outcome.succeeded)
        XCTAssertEqual(outcome.completionOrder, [0, 1, 2, 3, 4])
        XCTAssertEqual(server.receivedRequests.map(\.target), requests.map { "/n?" + ($0.url.query ?? "") })
    }

    func testConcurrentCancelRestCancelsTheOthersAndWaitsForThem() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gate = Gate()
        defer { gate.release() }
        let gauge = server.routeCountingInFlight("/hang") { _ in gate.wait(); return .text("late") }
        server.route("/reset") { _ in .reset }
        let client = try makeClient()
        let ended = Recorder<Int>()
        let members: [PocketRequestGroup<PocketResponse>.Member] = [
            { defer { ended.append(0) }; return try await client.send(PocketRequest(url: url(server, "/hang?0"))) },
            { defer { ended.append(1) }; return try await client.send(PocketRequest(url: url(server, "/hang?1"))) },
            {
                defer { ended.append(2) }
                // Fail only once both others are in flight.
                while gauge.current < 2 { try await Task.sleep(for: .milliseconds(5)) }
                return try await client.send(PocketRequest(url: url(server, "/reset")))
            },
        ]
        let outcome = await PocketRequestGroup(mode: .concurrent(onError: .cancelRest), members: members).run()
        XCTAssertEqual(Set(ended.values), [0, 1, 2], "the group ended after every member")
        XCTAssertTrue(outcome.results[2].isFailure)
        for i in 0..<2 {
            guard case .cancelled = outcome.results[i] else { return XCTFail("member \(i): \(outcome.results[i])") }
        }
        XCTAssertEqual(outcome.completionOrder.first, 2, "the failure came first")
        XCTAssertEqual(outcome.completionOrder.count, 3)
        gate.release()
        XCTAssertTrue(server.waitUntil(timeout: 5) { $0.openConnections == 0 }, "the cancelled requests' sockets were closed")
    }

    func testConcurrentCollectAllLetsEveryMemberFinish() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let failed = Gate()
        defer { failed.release() }
        server.route("/after-failure") { _ in failed.wait(); return .text("done") }
        server.route("/reset") { _ in .reset }
        let client = try makeClient()
        let members: [PocketRequestGroup<PocketResponse>.Member] = [
            { try await client.send(PocketRequest(url: url(server, "/after-failure"))) },
            { try await client.send(PocketRequest(url: url(server, "/reset"))) },
            { try await client.send(PocketRequest(url: url(server, "/after-failure"))) },
        ]
        // The others are answered only once the failure has been recorded.
        let outcome = await PocketRequestGroup(mode: .concurrent(onError: .collectAll), members: members).run { _ in failed.release() }
        XCTAssertEqual(outcome.results[0].value?.text, "done")
        XCTAssertTrue(outcome.results[1].isFailure)
        XCTAssertEqual(outcome.results[2].value?.text, "done")
        XCTAssertEqual(outcome.completionOrder.first, 1)
        XCTAssertEqual(Set(outcome.completionOrder), [0, 1, 2])
        XCTAssertFalse(outcome.succeeded)
    }

    func testCompletionOrderAndProgressFollowTheServer() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let firstDone = Gate()
        defer { firstDone.release() }
        server.route("/slow") { _ in firstDone.wait(); return .text("slow") }
        server.route("/fast") { _ in .text("fast") }
        let client = try makeClient()
        let progress = Recorder<PocketGroupProgress>()
        let members: [PocketRequestGroup<String>.Member] = [
            { try await client.send(PocketRequest(url: url(server, "/slow"))).text },
            { try await client.send(PocketRequest(url: url(server, "/fast"))).text },
        ]
        let outcome = await PocketRequestGroup(mode: .concurrent(onError: .cancelRest), members: members).run {
            progress.append($0)
            firstDone.release()   // /slow is answered only after a member completed
        }
        XCTAssertEqual(outcome.completionOrder, [1, 0])
        XCTAssertEqual(outcome.results.map(\.value), ["slow", "fast"], "results stay in member order")
        XCTAssertEqual(progress.values, [PocketGroupProgress(finished: 1, total: 2), PocketGroupProgress(finished: 2, total: 2)])
        XCTAssertEqual(progress.values.last?.fraction, 1)
    }

    func testEmptyGroupCompletesAtOnce() async {
        let progress = Recorder<PocketGroupProgress>()
        for mode: PocketRequestGroup<Int>.Mode in [.serial, .concurrent(onError: .cancelRest), .concurrent(onError: .collectAll)] {
            let outcome = await PocketRequestGroup<Int>(mode: mode, members: []).run { progress.append($0) }
            XCTAssertTrue(outcome.results.isEmpty)
            XCTAssertTrue(outcome.succeeded)
            XCTAssertNil(outcome.firstError)
        }
        XCTAssertTrue(progress.values.isEmpty)
    }

    func testGroupThroughAQueueKeepsTheQueuesCap() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let gauge = InFlightGauge()
        server.routeCountingInFlight("/q", gauge: gauge) { _ in
            // Hold requests until two are in flight (or the last one runs alone).
            gauge.wait(timeout: 5) { current, completed in current >= min(2, 10 - completed) }
            return .text("ok")
        }
        let client = try makeClient()
        let queue = PocketRequestQueue(client: client, maxConcurrent: 2, maxConcurrentPerHost: 2)
        let requests = (0..<10).map { PocketRequest(url: url(server, "/q?\($0)")) }
        let outcome = await PocketRequestGroup(mode: .concurrent(onError: .collectAll), requests: requests, queue: queue).run()
        XCTAssertTrue(outcome.succeeded)
        XCTAssertEqual(gauge.peak, 2)
        XCTAssertEqual(queue.metrics.completed, 10)
    }
}
