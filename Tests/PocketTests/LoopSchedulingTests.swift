import Foundation
import XCTest
import Pocket
import PocketTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `PocketClient.setLoopScheduling(_:)`: the policy read back on the loop
/// thread itself, requests through real sockets under it.
final class LoopSchedulingTests: XCTestCase {
    /// The scheduling policy of the client's (first) loop thread, read there.
    private func loopPolicy(_ client: PocketClient) async -> Int32 {
        #if os(Linux) && canImport(Glibc)
        return await Task(executorPreference: client.executor) { sched_getscheduler(0) }.value
        #else
        return -1
        #endif
    }

    func testBatchIsAppliedToTheLoopThreadAndRequestsFlowUnderIt() async throws {
        #if os(Linux) && canImport(Glibc)
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        let other = try makeClient()
        let standard: Int32 = 0, batch: Int32 = 3 // SCHED_OTHER, SCHED_BATCH
        let initial = await loopPolicy(client)
        XCTAssertEqual(initial, standard, "the system's default until asked")

        let applied = await client.setLoopScheduling(.batch)
        XCTAssertTrue(applied)
        let changed = await loopPolicy(client)
        XCTAssertEqual(changed, batch)
        let untouched = await loopPolicy(other)
        XCTAssertEqual(untouched, standard, "another client's engine keeps its own threads' policy")

        // Concurrent requests from the global pool and from the loop itself.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<40 {
                if i % 2 == 0 {
                    group.addTask { try await client.send(PocketRequest(url: url(server, "/"))).status }
                } else {
                    group.addTask(executorPreference: client.executor) { try await client.send(PocketRequest(url: url(server, "/"))).status }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 40))

        let back = await client.setLoopScheduling(.standard)
        XCTAssertTrue(back)
        let restored = await loopPolicy(client)
        XCTAssertEqual(restored, standard)
        try await client.shutdown()
        try await other.shutdown()
        let afterShutdown = await client.setLoopScheduling(.batch)
        XCTAssertFalse(afterShutdown, "no loop left to apply it")
        #endif
    }

    func testEveryLoopOfAMultiLoopEngineIsAsked() async throws {
        #if os(Linux) && canImport(Glibc)
        let client = try makeClient { $0.engineThreads = 3 }
        let applied = await client.setLoopScheduling(.batch)
        XCTAssertTrue(applied)
        let first = await loopPolicy(client)
        XCTAssertEqual(first, 3)
        try await client.shutdown()
        #endif
    }
}
