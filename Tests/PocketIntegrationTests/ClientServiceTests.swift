import Foundation
import Logging
import ServiceLifecycle
import XCTest
import Pocket
import PocketServiceLifecycle
import PocketTestSupport

/// `PocketClientService` in a `ServiceGroup`: graceful shutdown with
/// requests in flight.
final class ClientServiceTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    private func configuration() -> PocketClient.Configuration {
        var config = PocketClient.Configuration()
        config.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(10), total: .seconds(20))
        return config
    }

    func testGracefulShutdownRefusesNewRequestsAndLetsInFlightOnesFinish() async throws {
        let arrived = CallCounter()
        server.route("/slow") { _ in
            _ = arrived.next()
            Thread.sleep(forTimeInterval: 0.4)
            return .text("done")
        }
        let service = try PocketClientService(configuration: configuration(), drainTimeout: .seconds(5))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }

        let client = service.client
        let slow = PocketRequest(url: URL(string: server.url("/slow"))!)
        let inFlight = (0..<3).map { _ in Task { try await client.send(slow) } }
        let allArrived = await poll { arrived.count == 3 }
        XCTAssertTrue(allArrived)
        let began = ContinuousClock.now
        await group.triggerGracefulShutdown()
        let closing = await poll { service.isShuttingDown }
        XCTAssertTrue(closing)

        let refused = await expectPocketError(.shutdown) {
            try await client.send(slow)
        }
        XCTAssertTrue(refused?.message.contains("graceful shutdown") ?? false, "\(String(describing: refused))")
        for task in inFlight {
            let response = try await task.value
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.text, "done")
        }
        try await running.value
        XCTAssertLessThan(ContinuousClock.now - began, .seconds(3), "returned when drained, not at the deadline")
        XCTAssertEqual(arrived.count, 3, "the refused request never reached the server")
        await expectPocketError(.shutdown) {
            try await client.send(slow)
        }
    }

    func testRequestsStillRunningAtTheDeadlineFailWithShutdown() async throws {
        let arrived = CallCounter()
        server.route("/stuck") { _ in
            _ = arrived.next()
            return .stall(milliseconds: 10_000)
        }
        let service = try PocketClientService(configuration: configuration(), drainTimeout: .milliseconds(300))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        let request = PocketRequest(url: URL(string: server.url("/stuck"))!)
        let stuck = Task { try await service.client.send(request) }
        let hasArrived = await poll { arrived.count == 1 }
        XCTAssertTrue(hasArrived)
        let began = ContinuousClock.now
        await group.triggerGracefulShutdown()
        await expectPocketError(.shutdown) { try await stuck.value }
        try await running.value
        let took = ContinuousClock.now - began
        XCTAssertGreaterThanOrEqual(took, .milliseconds(300), "waited for the drain")
        XCTAssertLessThan(took, .seconds(3), "then stopped at the deadline")
    }

    func testCancellingTheServiceShutsTheClientDownAtOnce() async throws {
        server.route("/ok") { _ in .text("ok") }
        let service = try PocketClientService(configuration: configuration())
        let running = Task { try await service.run() }
        let response = try await service.client.send(PocketRequest(url: URL(string: server.url("/ok"))!))
        XCTAssertEqual(response.status, 200)
        running.cancel()
        try await running.value
        await expectPocketError(.shutdown) {
            try await service.client.send(PocketRequest(url: URL(string: "http://127.0.0.1:1/ok")!))
        }
    }
}
