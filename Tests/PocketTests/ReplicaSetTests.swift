import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Replica sets through real sockets: routing, balancing, ejection and the
/// circuit breaker against in-process servers on loopback.
final class ReplicaSetTests: XCTestCase {
    /// `n` servers answering `GET /x` with their own index.
    private func replicas(_ n: Int, _ reply: @escaping @Sendable (Int) -> TestServer.Reply = { .text("\($0)") }) throws -> [TestServer] {
        try (0..<n).map { i in
            let server = try TestServer()
            server.route("/x") { _ in reply(i) }
            return server
        }
    }

    private func endpoints(_ servers: [TestServer]) -> [PocketReplicaEndpoint] {
        servers.map { PocketReplicaEndpoint(host: $0.host, port: UInt16($0.port)) }
    }

    private let logical = URL(string: "http://svc/x")!

    func testRequestsForTheSetsNameGoToItsReplicasWithTheReplicasHost() async throws {
        let servers = try replicas(3)
        defer { servers.forEach { $0.shutdown() } }
        let set = PocketReplicaSet(name: "SVC", endpoints: endpoints(servers), balancing: .roundRobin)
        let client = try makeClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        var answers: [String] = []
        for _ in 0..<9 {
            let response = try await client.send(PocketRequest(url: URL(string: "http://Svc/x?q=1")!))
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.url?.host, "Svc", "the URL asked for, as with any request")
            answers.append(response.text)
        }
        XCTAssertEqual(answers, ["0", "1", "2", "0", "1", "2", "0", "1", "2"])
        for server in servers {
            XCTAssertEqual(server.requestCount, 3)
            let request = try XCTUnwrap(server.receivedRequests.last)
            XCTAssertEqual(request.target, "/x?q=1")
            XCTAssertEqual(request.headers.first { $0.0.lowercased() == "host" }?.1, "127.0.0.1:\(server.port)")
            XCTAssertEqual(server.acceptedConnections, 1, "each replica has its own pooled connection")
        }
        // Other hosts are not routed.
        let direct = try await client.send(PocketRequest(url: url(servers[1], "/x")))
        XCTAssertEqual(direct.text, "1")
        XCTAssertEqual(set.statistics.map(\.requests), [3, 3, 3])
    }

    func testASlowReplicaReceivesLessLoadUnderPowerOfTwoChoices() async throws {
        let servers = try replicas(3) { i in
            if i == 0 { usleep(20_000) }
            return .text("\(i)")
        }
        defer { servers.forEach { $0.shutdown() } }
        let set = PocketReplicaSet(name: "svc", endpoints: endpoints(servers), balancing: .powerOfTwoChoices)
        let client = try makeClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        let request = PocketRequest(url: logical)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<6 {
                group.addTask { for _ in 0..<50 { _ = try await client.send(request) } }
            }
            try await group.waitForAll()
        }
        let counts = servers.map(\.requestCount)
        XCTAssertEqual(counts.reduce(0, +), 300)
        // Round-robin would send it a third (100); the slow one gets far fewer.
        XCTAssertLessThan(counts[0], 45, "\(counts)")
    }

    func testARetryGoesToAReplicaTheRequestHasNotUsed() async throws {
        // The failing replica answers faster, so power of two choices
        // prefers it: only the request's memory keeps a retry off it.
        let servers = try replicas(2) { i in
            if i == 0 { return .text("busy", status: 503) }
            usleep(3_000)
            return .text("ok")
        }
        defer { servers.forEach { $0.shutdown() } }
        // A short decay: the latencies follow the last few answers, not a
        // cold first connection's.
        let set = PocketReplicaSet(name: "svc", endpoints: endpoints(servers), balancing: .powerOfTwoChoices(decay: .milliseconds(20)))
        let client = try makeClient {
            $0.replicaSets = [set]
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero))
        }
        defer { Task { try? await client.shutdown() } }
        for _ in 0..<40 {
            let response = try await client.send(PocketRequest(url: logical))
            XCTAssertEqual(response.status, 200)
        }
        XCTAssertGreaterThan(servers[0].requestCount, 10, "the first attempts went to the failing replica")
    }

    func testAReplicaStoppedMidRunIsEjectedWithinASecondAndNoRequestFailsAfter() async throws {
        let servers = try replicas(3)
        defer { servers.forEach { $0.shutdown() } }
        let set = PocketReplicaSet(name: "svc", endpoints: endpoints(servers), balancing: .powerOfTwoChoices,
                                   ejection: PocketOutlierEjection(consecutiveFailures: 3, baseEjectionTime: .seconds(30)))
        let ejections = Recorder<(PocketReplicaEvent, ContinuousClock.Instant)>()
        set.addObserver { event in if event.kind == .ejected { ejections.append((event, .now)) } }
        let client = try makeClient {
            $0.replicaSets = [set]
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.milliseconds(1)))
        }
        defer { Task { try? await client.shutdown() } }
        let failures = Recorder<(PocketError, ContinuousClock.Instant)>()
        let stoppedAt = Lock<ContinuousClock.Instant?>(nil)
        let request = PocketRequest(url: logical)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    let end = ContinuousClock.now + .milliseconds(1_500)
                    var sent = 0
                    while ContinuousClock.now < end {
                        do {
                            _ = try await client.send(request)
                        } catch let error as PocketError {
                            failures.append((error, .now))
                        }
                        sent += 1
                        if worker == 0, sent == 50 {
                            servers[2].shutdown()
                            stoppedAt.withLock { $0 = .now }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let stopped = try XCTUnwrap(stoppedAt.withLock { $0 })
        let ejected = try XCTUnwrap(ejections.values.first, "the stopped replica was not ejected")
        XCTAssertEqual(ejected.0.replica?.port, UInt16(servers[2].port))
        XCTAssertLessThan(ejected.1 - stopped, .seconds(1))
        XCTAssertEqual(ejections.values.count, 1, "only the stopped replica")
        let after = failures.values.filter { $0.1 > ejected.1 }
        XCTAssertTrue(after.isEmpty, "failed after the ejection: \(after.map(\.0))")
        XCTAssertTrue(try XCTUnwrap(set.statistics.last).isEjected)
    }

    func testEveryReplicaEjectedFailsAtOnceWithCircuitOpen() async throws {
        let servers = try replicas(2) { _ in .text("down", status: 503) }
        defer { servers.forEach { $0.shutdown() } }
        let set = PocketReplicaSet(name: "svc", endpoints: endpoints(servers),
                                   ejection: PocketOutlierEjection(consecutiveFailures: 2, maxEjectedShare: 1))
        let client = try makeClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        for _ in 0..<4 {
            let response = try await client.send(PocketRequest(url: logical))
            XCTAssertEqual(response.status, 503)
        }
        XCTAssertEqual(set.statistics.map(\.isEjected), [true, true])
        let started = ContinuousClock.now
        let error = await assertPocketError(.circuitOpen) { try await client.send(PocketRequest(url: self.logical)) }
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(50))
        XCTAssertTrue(error?.message.contains("'svc'") ?? false, error?.message ?? "")
        XCTAssertEqual(servers.map(\.requestCount), [2, 2])
    }

    func testAPlainOriginWithABreakerFailsAtOnceWhileEjected() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("down", status: 500) }
        server.route("/ok") { _ in .text("ok") }
        let client = try makeClient {
            $0.originEjection = PocketOutlierEjection(consecutiveFailures: 3, baseEjectionTime: .milliseconds(300))
        }
        defer { Task { try? await client.shutdown() } }
        for _ in 0..<3 {
            let response = try await client.send(PocketRequest(url: url(server, "/x")))
            XCTAssertEqual(response.status, 500)
        }
        let error = await assertPocketError(.circuitOpen) { try await client.send(PocketRequest(url: url(server, "/ok"))) }
        XCTAssertTrue(error?.message.contains("127.0.0.1:\(server.port)") ?? false, error?.message ?? "")
        XCTAssertEqual(server.requestCount, 3)
        // Half-open after the ejection time: the probe succeeds and closes the circuit.
        try await Task.sleep(for: .milliseconds(350))
        for _ in 0..<2 {
            let response = try await client.send(PocketRequest(url: url(server, "/ok")))
            XCTAssertEqual(response.text, "ok")
        }
    }

    func testTheApplicationsProviderReplacesTheList() async throws {
        let servers = try replicas(2)
        defer { servers.forEach { $0.shutdown() } }
        let (updates, feed) = AsyncStream<[PocketReplicaEndpoint]>.makeStream()
        let set = PocketReplicaSet(name: "svc", updates: updates)
        let changes = Recorder<Int>()
        set.addObserver { if $0.kind == .replicasChanged { changes.append($0.replicaCount) } }
        let client = try makeClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        let list = endpoints(servers)
        let request = PocketRequest(url: logical)
        // A request before the first list waits for it.
        let first = Task { try await client.send(request) }
        try await Task.sleep(for: .milliseconds(50))
        feed.yield([list[0]])
        let firstText = try await first.value.text
        XCTAssertEqual(firstText, "0")
        feed.yield([list[1]])
        let moved = await eventually { set.endpoints == [list[1]] }
        XCTAssertTrue(moved)
        let secondText = try await client.send(request).text
        XCTAssertEqual(secondText, "1")
        feed.yield([])
        let emptied = await eventually { set.endpoints.isEmpty }
        XCTAssertTrue(emptied)
        await assertPocketError(.noReplicas) { try await client.send(request) }
        XCTAssertEqual(changes.values, [1, 1, 0])
        feed.finish()
    }

    private func eventually(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
