import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// DNS replica sets (`PocketReplicaSet.dns`) against a DNS server on a
/// loopback UDP port (`TestDNSServer`): re-resolution by the records' TTL,
/// its floor, failures, and the system resolver for names DNS does not know.
final class ReplicaSetDNSTests: XCTestCase {
    private let logical = URL(string: "http://svc/x")!
    private let record = "api.pocket.test"

    private func dns() throws -> (TestDNSServer, String) {
        let server = try TestDNSServer()
        return (server, "127.0.0.1:\(server.port)")
    }

    /// Polls `condition` every 5 ms for up to `seconds`.
    private func eventually(within seconds: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    func testASetConnectsThroughTheRecordsAddressAndTakesAChangedRecordWhenItsTTLRunsOutNotBefore() async throws {
        let (dnsServer, nameserver) = try dns()
        defer { dnsServer.shutdown() }
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { request in .text(request.headers.first { $0.0.lowercased() == "host" }?.1 ?? "") }
        dnsServer.set(record, a: ["127.0.0.1"], ttl: 3)
        // A refresh far above the TTL: the TTL alone brings the change.
        let set = PocketReplicaSet.dns(name: "svc", host: record, port: UInt16(server.port), refresh: .seconds(60),
                                       nameserver: nameserver)
        let first = await eventually(within: 5) { !set.endpoints.isEmpty }
        XCTAssertTrue(first)
        let seen = ContinuousClock.now
        dnsServer.set(record, a: ["127.0.0.2"], ttl: 3)
        XCTAssertEqual(set.endpoints.map(\.address), ["127.0.0.1"])
        XCTAssertEqual(dnsServer.queries(record), 2, "one A and one AAAA query")

        let client = try makeClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: logical))
        XCTAssertEqual(response.text, "\(record):\(server.port)", "the name is the Host; the record's address is where it connects")

        try await Task.sleep(for: .milliseconds(1500))
        XCTAssertEqual(set.endpoints.map(\.address), ["127.0.0.1"], "the record is not asked again before its TTL")
        XCTAssertEqual(dnsServer.queries(record), 2)
        let changed = await eventually(within: 6) { set.endpoints.map(\.address) == ["127.0.0.2"] }
        XCTAssertTrue(changed, "the changed record after the TTL: \(set.endpoints.map(\.address))")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - seen, .milliseconds(1500))
        XCTAssertEqual(set.endpoints.first?.host, record)
    }

    func testATTLOfZeroIsAskedAgainAfterASecondNotInALoop() async throws {
        let (dnsServer, nameserver) = try dns()
        defer { dnsServer.shutdown() }
        dnsServer.set(record, a: ["127.0.0.1"], aaaa: ["::1"], ttl: 0)
        let set = PocketReplicaSet.dns(name: "svc", host: record, port: 80, refresh: .seconds(60), nameserver: nameserver)
        let first = await eventually(within: 5) { !set.endpoints.isEmpty }
        XCTAssertTrue(first)
        XCTAssertEqual(Set(set.endpoints.map(\.address)), ["127.0.0.1", "::1"])
        try await Task.sleep(for: .milliseconds(2500))
        // Lookups (two queries each) at about 0, 1 and 2 s; a loop would make thousands.
        let queries = dnsServer.queries(record)
        XCTAssertGreaterThanOrEqual(queries, 4, "a TTL of 0 is still re-resolved")
        XCTAssertLessThanOrEqual(queries, 8, "at most one lookup a second")
    }

    func testAFailingNameKeepsTheLastListReportsWhyAndIsTriedAgain() async throws {
        let (dnsServer, nameserver) = try dns()
        defer { dnsServer.shutdown() }
        dnsServer.set(record, a: ["127.0.0.1"], ttl: 1)
        let set = PocketReplicaSet.dns(name: "svc", host: record, port: 80, refresh: .seconds(60), nameserver: nameserver)
        let first = await eventually(within: 5) { !set.endpoints.isEmpty }
        XCTAssertTrue(first)
        dnsServer.fail(record, rcode: 2)
        let servfail = await eventually(within: 5) { set.discoveryProblem?.contains("SERVFAIL") == true }
        XCTAssertTrue(servfail, "\(set.discoveryProblem ?? "no problem reported")")
        XCTAssertEqual(set.endpoints.map(\.address), ["127.0.0.1"], "the last list stays")
        dnsServer.fail(record, rcode: 3)
        let nxdomain = await eventually(within: 5) { set.discoveryProblem?.contains("NXDOMAIN") == true }
        XCTAssertTrue(nxdomain, "\(set.discoveryProblem ?? "no problem reported")")
        XCTAssertEqual(set.endpoints.map(\.address), ["127.0.0.1"])
        // Tried again after a bounded backoff: the record back, the list follows.
        dnsServer.set(record, a: ["127.0.0.3"], ttl: 60)
        let back = await eventually(within: 6) { set.endpoints.map(\.address) == ["127.0.0.3"] }
        XCTAssertTrue(back)
        XCTAssertNil(set.discoveryProblem)

        // A set that never had a list says why in `.noReplicas`.
        dnsServer.fail("gone.pocket.test", rcode: 2)
        let gone = PocketReplicaSet.dns(name: "svc", host: "gone.pocket.test", port: 80, nameserver: nameserver)
        let client = try makeClient { $0.replicaSets = [gone] }
        defer { Task { try? await client.shutdown() } }
        do {
            _ = try await client.send(PocketRequest(url: logical))
            XCTFail("a set without replicas answered")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .noReplicas)
            XCTAssertTrue(error.message.contains("resolving gone.pocket.test failed: DNS: the nameserver failed (SERVFAIL)"),
                          error.message)
        }
    }

    func testANameDNSDoesNotKnowIsAskedOfTheSystemResolver() async throws {
        let (dnsServer, nameserver) = try dns()
        defer { dnsServer.shutdown() }
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { request in .text(request.headers.first { $0.0.lowercased() == "host" }?.1 ?? "") }
        XCTAssertTrue(try PocketReplicaSet.resolve("localhost").get().contains("127.0.0.1"))
        // The DNS server answers NXDOMAIN for `localhost`; /etc/hosts knows it.
        // `localhost` may resolve to ::1 too, where nothing listens: that
        // replica fails and the retry goes to the other.
        let set = PocketReplicaSet.dns(name: "svc", host: "localhost", port: UInt16(server.port), refresh: .milliseconds(100),
                                       nameserver: nameserver)
        let client = try makeClient {
            $0.replicaSets = [set]
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero))
        }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: logical))
        XCTAssertEqual(response.text, "localhost:\(server.port)")
        XCTAssertTrue(set.endpoints.contains { $0.address == "127.0.0.1" && $0.host == "localhost" })
        XCTAssertGreaterThanOrEqual(dnsServer.queries("localhost"), 2, "DNS is asked first")
        // No TTL from the system resolver: asked again every `refresh`.
        let before = dnsServer.queries("localhost")
        let again = await eventually(within: 3) { dnsServer.queries("localhost") >= before + 4 }
        XCTAssertTrue(again)

        await assertPocketError(.noReplicas) {
            let nowhere = PocketReplicaSet.dns(name: "svc", host: "nowhere.invalid", port: 80, nameserver: nameserver)
            let client = try makeClient { $0.replicaSets = [nowhere] }
            defer { Task { try? await client.shutdown() } }
            return try await client.send(PocketRequest(url: self.logical))
        }
    }

    func testANameserverThatIsNotANumericAddressIsReported() async throws {
        let set = PocketReplicaSet.dns(name: "svc", host: record, port: 80, nameserver: "dns.example:53")
        let reported = await eventually(within: 5) { set.discoveryProblem != nil }
        XCTAssertTrue(reported)
        XCTAssertEqual(set.discoveryProblem,
                       "resolving \(record) failed: the nameserver 'dns.example:53' is not a numeric IPv4 or IPv6 address "
                       + "with an optional port (a.b.c.d:port, [v6]:port)")
        XCTAssertTrue(set.endpoints.isEmpty)
    }

    /// The nameserver on ::1: the records come from it (the name is in no
    /// other DNS and not in /etc/hosts), and a request reaches the replica.
    func testAnIPv6NameserverIsAsked() async throws {
        let dnsServer = try TestDNSServer(ipv6: true)
        defer { dnsServer.shutdown() }
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("ok") }
        dnsServer.set(record, a: ["127.0.0.1"], ttl: 30)
        let set = PocketReplicaSet.dns(name: "svc", host: record, port: UInt16(server.port), nameserver: dnsServer.nameserver)
        let resolved = await eventually(within: 5) { !set.endpoints.isEmpty }
        XCTAssertTrue(resolved, "\(set.discoveryProblem ?? "no problem reported")")
        XCTAssertEqual(set.endpoints.map(\.address), ["127.0.0.1"])
        XCTAssertEqual(dnsServer.queries(record), 2, "one A and one AAAA query, to [::1]:\(dnsServer.port)")
        let client = try makeClient { $0.replicaSets = [set] }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: logical))
        XCTAssertEqual(response.text, "ok")
    }

    // MARK: the intervals and the nameserver, without sockets

    func testTheRefreshIntervalIsTheTTLBetweenOneSecondAndTheRefresh() {
        let ceiling = Duration.seconds(30)
        XCTAssertEqual(PocketReplicaSet.refreshInterval(ttl: 5, ceiling: ceiling), .seconds(5))
        XCTAssertEqual(PocketReplicaSet.refreshInterval(ttl: 0, ceiling: ceiling), .seconds(1))
        XCTAssertEqual(PocketReplicaSet.refreshInterval(ttl: 86_400, ceiling: ceiling), .seconds(30))
        XCTAssertEqual(PocketReplicaSet.refreshInterval(ttl: nil, ceiling: ceiling), .seconds(30))
        XCTAssertEqual(PocketReplicaSet.refreshInterval(ttl: 0, ceiling: .milliseconds(100)), .milliseconds(100))
    }

    func testTheRetryIntervalDoublesFromOneSecondUpToTheRefresh() {
        let intervals = (1...7).map { PocketReplicaSet.retryInterval(failures: $0, ceiling: .seconds(30)) }
        XCTAssertEqual(intervals, [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30)])
        XCTAssertEqual(PocketReplicaSet.retryInterval(failures: 1_000_000, ceiling: .seconds(30)), .seconds(30))
    }

    func testANameserverIsANumericAddressWithAnOptionalPort() {
        XCTAssertTrue(PocketReplicaSet.parseNameserver("10.0.0.2")! == ("10.0.0.2", 53))
        XCTAssertTrue(PocketReplicaSet.parseNameserver("127.0.0.1:8600")! == ("127.0.0.1", 8600))
        XCTAssertTrue(PocketReplicaSet.parseNameserver("::1")! == ("::1", 53))
        XCTAssertTrue(PocketReplicaSet.parseNameserver("fd00::53")! == ("fd00::53", 53))
        XCTAssertTrue(PocketReplicaSet.parseNameserver("[::1]")! == ("::1", 53))
        XCTAssertTrue(PocketReplicaSet.parseNameserver("[fd00::53]:8600")! == ("fd00::53", 8600))
        for bad in ["", "dns.example", "10.0.0.2:", "10.0.0.2:0", "10.0.0.2:65536", "10.0.0.2:53:1", "[::1]:", "[::1]:0",
                    "[::1", "[::1]53", "[10.0.0.2]:53", "[dns.example]:53", "::1:53:x", "10.0.0.2:+53", "[::1]:٥٣"] {
            XCTAssertNil(PocketReplicaSet.parseNameserver(bad), bad)
        }
    }
}
