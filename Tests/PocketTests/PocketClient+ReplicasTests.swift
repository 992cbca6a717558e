import Foundation
import XCTest
@testable import Pocket

/// A routed hop (PocketClient+Replicas.swift) through a fake hop: with a
/// transport, the request reaches it moved to the chosen replica, and the
/// outcome is reported to the set. The socket tests (ReplicaSetTests)
/// cover the engine's route, where the replica is handed to the engine.
final class ReplicaHopTests: XCTestCase {
    func testThroughATransportTheRequestIsMovedToEachChosenReplica() async throws {
        let hop = FakeHop { _, n in n == 2 ? answer(503) : answer(200) }
        let set = PocketReplicaSet(name: "catalog", endpoints: [PocketReplicaEndpoint(host: "10.0.0.1", port: 8080),
                                                                PocketReplicaEndpoint(scheme: "https", host: "10.0.0.2", port: 9443)],
                                   balancing: .roundRobin)
        let client = try hop.client { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        for _ in 0..<3 {
            _ = try await client.send(PocketRequest(url: URL(string: "http://Catalog/items?page=2")!))
        }
        XCTAssertEqual(hop.requests.map(\.url.absoluteString),
                       ["http://10.0.0.1:8080/items?page=2", "https://10.0.0.2:9443/items?page=2", "http://10.0.0.1:8080/items?page=2"])
        XCTAssertEqual(set.statistics.map(\.requests), [2, 1])
        XCTAssertEqual(set.statistics.map(\.failures), [0, 1], "the 503 counts against the replica that answered it")
    }

    func testARequestToAnotherHostIsNotMoved() async throws {
        let hop = FakeHop([answer(200)])
        let set = PocketReplicaSet(name: "catalog", endpoints: [PocketReplicaEndpoint(host: "10.0.0.1", port: 8080)])
        let client = try hop.client { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        _ = try await client.send(PocketRequest(url: URL(string: "http://orders.test/x")!))
        XCTAssertEqual(hop.requests.map(\.url.absoluteString), ["http://orders.test/x"])
        XCTAssertEqual(set.statistics.map(\.requests), [0])
    }
}
