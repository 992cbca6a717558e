import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

final class LifecycleTests: XCTestCase {
    func testShutdownFailsInFlightRequests() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 5000) }
        let client = try makeClient()
        let task = Task { try await client.send(PocketRequest(url: url(server, "/"))) }
        await assertEventually("") { server.requestCount == 1 }
        try await client.shutdown()
        await assertPocketError(.shutdown) { try await task.value }
        await assertPocketError(.shutdown) { try await client.send(PocketRequest(url: url(server, "/"))) }
        try await client.shutdown() // idempotent
    }

    func testDroppingTheClientJoinsItsThreads() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        // Engine threads of clients other test cases still hold (XCTest keeps
        // test case objects alive until the end of the run).
        let others = engineThreadCount()
        // Warm up the process (test server threads, cooperative pool).
        do {
            let c = try makeClient()
            _ = try await c.send(PocketRequest(url: url(server, "/")))
        }
        await assertEventually("engine threads left: \(engineThreadCount()), others \(others)") { engineThreadCount() <= others }
        let fdsBefore = openFileDescriptorCount()
        for _ in 0..<5 {
            let client = try makeClient()
            _ = try await client.send(PocketRequest(url: url(server, "/")))
            _ = try await client.send(PocketRequest(url: URL(string: "http://localhost:\(server.port)/")!))
            // dropped here without shutdown
        }
        await assertEventually("engine threads: \(engineThreadCount()), others \(others)") { engineThreadCount() <= others }
        await assertEventually("fds: \(openFileDescriptorCount()) vs \(fdsBefore)") { openFileDescriptorCount() <= fdsBefore }
    }

    func testThousandConcurrentRequestsReturnFileDescriptorsToStart() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        try await Task.sleep(for: .milliseconds(50))
        let fdsBefore = openFileDescriptorCount()
        var client: PocketClient? = try makeClient { $0.maxConnectionsPerOrigin = 32 }
        try await withThrowingTaskGroup(of: Int.self) { [client] group in
            for _ in 0..<1000 {
                group.addTask { try await client!.send(PocketRequest(url: url(server, "/"))).status }
            }
            var ok = 0
            for try await status in group where status == 200 { ok += 1 }
            XCTAssertEqual(ok, 1000)
        }
        XCTAssertLessThanOrEqual(server.maxConcurrentConnections, 32)
        try await client!.shutdown()
        client = nil // closes the engine's epoll and eventfd too
        await assertEventually("fds: \(openFileDescriptorCount()) vs \(fdsBefore)") { openFileDescriptorCount() <= fdsBefore }
    }

    func testWarmRequestsAllocateNothingInTheEngine() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        // Warm up until the engine's free lists cover this pattern (how many
        // request structs are in circulation depends on thread timing).
        let request = PocketRequest(url: url(server, "/"))
        for _ in 0..<20 {
            let start = PocketClient.engineAllocationCount
            for _ in 0..<200 { _ = try await client.send(request) }
            if PocketClient.engineAllocationCount == start { break }
        }
        let before = PocketClient.engineAllocationCount
        for _ in 0..<2000 { _ = try await client.send(request) }
        let after = PocketClient.engineAllocationCount
        // Zero per request. The counter is process-wide and the number of
        // request structs in circulation depends on thread timing, so one late
        // growth of the free list (a struct and its head buffer) is tolerated;
        // anything per request would show as hundreds here.
        XCTAssertLessThanOrEqual(after - before, 2, "engine allocations on 2000 warm keep-alive requests")
    }
}
