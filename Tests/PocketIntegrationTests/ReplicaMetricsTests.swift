import CoreMetrics
import Foundation
import MetricsTestKit
import XCTest
import Pocket
import PocketMetrics
import PocketTestSupport

/// `PocketReplicaMetrics` against a replica set whose replicas fail, read
/// back from `MetricsTestKit`.
final class ReplicaMetricsTests: XCTestCase {
    func testEjectionsAreCountedPerReplicaAndTheGaugesSampleTheSet() async throws {
        let servers = try (0..<2).map { _ in try TestServer() }
        defer { servers.forEach { $0.shutdown() } }
        for server in servers { server.route("/x") { _ in .text("down", status: 503) } }
        let replicas = servers.map { PocketReplicaEndpoint(host: $0.host, port: UInt16($0.port)) }
        let set = PocketReplicaSet(name: "svc", endpoints: replicas, balancing: .roundRobin,
                                   ejection: PocketOutlierEjection(consecutiveFailures: 1, maxEjectedShare: 1))
        let metrics = TestMetrics()
        let gauges = PocketReplicaMetrics(set: set, factory: metrics)
        let client = try makeIntegrationClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }

        for _ in 0..<2 { _ = try await client.send(PocketRequest(url: URL(string: "http://svc/x")!)) }
        for replica in replicas {
            XCTAssertEqual(try metrics.expectCounter("pocket_client_replica_ejections_total",
                                                     [("set", "svc"), ("replica", replica.description)]).totalValue, 1)
        }
        XCTAssertEqual(try metrics.expectGauge("pocket_client_replicas_ejected", [("set", "svc")]).lastValue, 2)
        gauges.record()
        XCTAssertEqual(try metrics.expectGauge("pocket_client_replicas", [("set", "svc")]).lastValue, 2)
        XCTAssertEqual(try metrics.expectGauge("pocket_client_replica_outstanding",
                                               [("set", "svc"), ("replica", replicas[0].description)]).lastValue, 0)
        let latency = try metrics.expectGauge("pocket_client_replica_latency_seconds",
                                              [("set", "svc"), ("replica", replicas[0].description)]).lastValue
        XCTAssertGreaterThan(try XCTUnwrap(latency), 0)
        XCTAssertLessThan(try XCTUnwrap(latency), 5)
    }
}
