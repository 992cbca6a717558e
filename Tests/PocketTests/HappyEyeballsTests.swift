import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Address overrides (curl's --resolve) and the happy-eyeballs race (RFC
/// 8305) through real sockets: a black hole is a loopback listener whose
/// accept queue is full (`FullAcceptQueue`), so a connect to it hangs.
final class HappyEyeballsTests: XCTestCase {
    /// A black hole on 127.0.0.1:P and a server on [::1]:P (the port is shared
    /// by the addresses of one override).
    private func holeAndServer() throws -> (FullAcceptQueue, TestServer) {
        let hole = try FullAcceptQueue()
        addTeardownBlock { hole.close() }
        let server = try TestServer(host: "::1", port: hole.port)
        addTeardownBlock { server.shutdown() }
        server.route("/hi") { request in .text("hi \(request.header("Host") ?? "-")") }
        return (hole, server)
    }

    private func client(_ overrides: [String], delay: Duration = .milliseconds(250),
                        connect: Duration = .seconds(5)) throws -> PocketClient {
        let parsed = try overrides.map { try PocketAddressOverride($0) }
        return try makeClient {
            $0.addressOverrides = parsed
            $0.connectionAttemptDelay = delay
            $0.timeouts.connect = connect
        }
    }

    func testBlackHoledFirstFamilyCostsAboutTheStaggerAndLeaksNoDescriptor() async throws {
        let (hole, server) = try holeAndServer()
        let client = try client(["race.test:\(hole.port):127.0.0.1,[::1]"])
        let before = openFileDescriptorCount()
        let started = ContinuousClock.now
        let r = try await client.send(try PocketRequest("http://race.test:\(hole.port)/hi"))
        let elapsed = ContinuousClock.now - started
        XCTAssertEqual(r.text, "hi race.test:\(hole.port)", "the URL's name is the Host field")
        XCTAssertEqual(r.timings.remoteAddress, "::1")
        XCTAssertEqual(r.timings.connectAttempts, 2)
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(240))
        XCTAssertLessThan(elapsed, .milliseconds(900), "the IPv6 attempt started after 250 ms and won")
        XCTAssertGreaterThanOrEqual(r.timings.connect, .milliseconds(240), "connect covers the race")
        // The loser was closed: once the winner is gone too, the count is back.
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertEqual(server.closeIdleConnections(), 1)
        let restored = await eventually(3) { openFileDescriptorCount() == before }
        XCTAssertTrue(restored, "descriptors: \(before) before, \(openFileDescriptorCount()) after")
        // The next connection races again; a pooled one does not race at all.
        let again = try await client.send(try PocketRequest("http://race.test:\(hole.port)/hi"))
        XCTAssertEqual(again.timings.connectAttempts, 2)
        let reused = try await client.send(try PocketRequest("http://race.test:\(hole.port)/hi"))
        XCTAssertTrue(reused.timings.reusedConnection)
        XCTAssertEqual(reused.timings.connectAttempts, 0)
        XCTAssertEqual(reused.timings.remoteAddress, r.timings.remoteAddress, "a reused connection keeps its figures")
    }

    func testWithoutTheStaggerTheBlackHoleHoldsUntilTheConnectTimeout() async throws {
        let (hole, _) = try holeAndServer()
        let client = try client(["race.test:\(hole.port):127.0.0.1,::1"], delay: .zero, connect: .milliseconds(600))
        let started = ContinuousClock.now
        await assertPocketError(.connectTimeout) {
            try await client.send(try PocketRequest("http://race.test:\(hole.port)/hi"))
        }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(550), "one address at a time")
    }

    func testTheConnectTimeoutCoversTheWholeRace() async throws {
        let hole = try FullAcceptQueue()
        defer { hole.close() }
        // [::1]:P refuses at once, 127.0.0.1:P hangs: the race runs out of
        // addresses with one attempt pending, and the deadline ends it.
        let client = try client(["race.test:\(hole.port):::1,127.0.0.1,127.0.0.1"], connect: .milliseconds(700))
        let before = openFileDescriptorCount()
        let started = ContinuousClock.now
        let error = await assertPocketError(.connectTimeout) {
            try await client.send(try PocketRequest("http://race.test:\(hole.port)/hi"))
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertNotNil(error)
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(650))
        XCTAssertLessThan(elapsed, .milliseconds(1500))
        XCTAssertEqual(openFileDescriptorCount(), before, "both pending attempts were closed")
    }

    func testFamiliesInterleaveAndAFailureStartsTheNextAtOnce() async throws {
        let (hole, server) = try holeAndServer()
        // Two IPv4 black holes listed first: interleaved, IPv6 is the second attempt.
        let client = try client(["race.test:\(hole.port):127.0.0.1,127.0.0.1,::1"])
        let r = try await client.send(try PocketRequest("http://race.test:\(hole.port)/hi"))
        XCTAssertEqual(r.timings.connectAttempts, 2)
        XCTAssertEqual(r.timings.remoteAddress, "::1")
        XCTAssertEqual(server.acceptedConnections, 1)

        // A refused first address: the next starts without waiting 250 ms.
        let v4 = try TestServer()
        defer { v4.shutdown() }
        v4.route("/hi") { _ in .text("v4") }
        let fast = try self.client(["fast.test:\(v4.port):::1,127.0.0.1"], delay: .seconds(3))
        let started = ContinuousClock.now
        let answer = try await fast.send(try PocketRequest("http://fast.test:\(v4.port)/hi"))
        XCTAssertEqual(answer.text, "v4")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1))
        XCTAssertEqual(answer.timings.remoteAddress, "127.0.0.1")
        XCTAssertEqual(answer.timings.connectAttempts, 2)
    }

    func testOverridesKeepTheNameForTLSAndAreValidated() async throws {
        let certificates = try TestCertificates.shared
        let server = try TestServer(tls: try .localhost())
        defer { server.shutdown() }
        server.route("/") { _ in .text("secure") }
        let override = try PocketAddressOverride(host: "LocalHost", port: UInt16(server.port), addresses: ["127.0.0.1"])
        let client = try makeClient {
            $0.tls.caFile = certificates.caCert
            $0.addressOverrides = [override]
        }
        let r = try await client.send(try PocketRequest("https://localhost:\(server.port)/"))
        XCTAssertEqual(r.text, "secure")
        XCTAssertEqual(r.timings.remoteAddress, "127.0.0.1")
        XCTAssertEqual(server.tlsHandshakeDetails.first?.serverName, "localhost", "SNI is the URL's name")

        XCTAssertEqual(try PocketAddressOverride("h:443:10.0.0.1,[fd00::1]").addresses, ["10.0.0.1", "fd00::1"])
        for bad in ["h:443", "h:x:1.2.3.4", "h:443:", "h:443:example.com", ":443:1.2.3.4", "h:0:1.2.3.4",
                    "h:1:" + Array(repeating: "1.1.1.1", count: 9).joined(separator: ",")] {
            XCTAssertThrowsError(try PocketAddressOverride(bad), bad) {
                XCTAssertEqual(($0 as? PocketError)?.code, .invalidAddressOverride, bad)
            }
        }
    }
}
