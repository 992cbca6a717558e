import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketResponseBodyStream.timings`: known once a streamed body has ended.
final class StreamTimingsTests: XCTestCase {
    func testTimingsArriveWithTheEndOfTheBody() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        // The second half of the body comes 2 s after the head.
        server.route("/s") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 12000\r\n\r\n"), .send(Array(repeating: 0x61, count: 5_000)),
                  .sleep(milliseconds: 2_000), .send(Array(repeating: 0x62, count: 7_000))])
        }
        let client = try makeClient()
        let response = try await client.stream(PocketRequest(url: url(server, "/s")))
        XCTAssertNil(response.body.timings, "not before the body has ended")
        var n = 0
        for try await chunk in response.body { n += chunk.count }
        XCTAssertEqual(n, 12_000)
        let timings = try XCTUnwrap(response.body.timings)
        XCTAssertFalse(timings.reusedConnection)
        XCTAssertGreaterThan(timings.bytesReceived, 12_000, "the head included")
        XCTAssertGreaterThan(timings.bytesSent, 0)

        server.route("/quick") { _ in .text("again") }
        let again = try await client.stream(PocketRequest(url: url(server, "/quick")))
        try await again.body.discard()
        XCTAssertEqual(again.body.timings?.reusedConnection, true)
        try await client.shutdown()
    }

    func testNoTimingsAfterAFailedBody() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/cut") { _ in .closeMidBody(declaredLength: 1_000, sentPrefix: Array(repeating: 0x61, count: 10)) }
        let client = try makeClient()
        let response = try await client.stream(PocketRequest(url: url(server, "/cut")))
        do {
            for try await _ in response.body {}
            XCTFail("a truncated body must throw")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .truncatedBody)
        }
        XCTAssertNil(response.body.timings)
        try await client.shutdown()
    }

    func testTimingsNameBothEndsOfTheConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/t") { _ in .text("x") }
        let client = try makeClient()
        let first = try await client.send(PocketRequest(url: URL(string: server.url("/t"))!))
        let second = try await client.send(PocketRequest(url: URL(string: server.url("/t"))!))
        XCTAssertEqual(first.timings.remoteAddress, "127.0.0.1")
        XCTAssertEqual(first.timings.remotePort, server.port)
        XCTAssertGreaterThan(first.timings.localPort, 0)
        XCTAssertNotEqual(first.timings.localPort, server.port)
        XCTAssertTrue(second.timings.reusedConnection)
        XCTAssertEqual(second.timings.localPort, first.timings.localPort, "a reused connection keeps its figures")
        XCTAssertEqual(second.timings.remoteAddress, "127.0.0.1")
        XCTAssertNil(PocketTimings().remoteAddress, "no connection, no address")
        // Every width of an octet, without sockets.
        for (bytes, text) in [([0, 9, 10, 99] as [UInt8], "0.9.10.99"), ([100, 199, 200, 255], "100.199.200.255"),
                              ([127, 0, 0, 1], "127.0.0.1"), ([255, 255, 255, 255], "255.255.255.255")] {
            var timings = PocketTimings()
            bytes.withUnsafeBytes { timings.setConnection(family: 4, address: $0, remotePort: 80, localPort: 1) }
            XCTAssertEqual(timings.remoteAddress, text)
        }
    }

    func testIPv6AddressText() {
        XCTAssertEqual(PocketTimings.ipv6Text([0, 0, 0, 0, 0, 0, 0, 1]), "::1")
        XCTAssertEqual(PocketTimings.ipv6Text([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1]), "2001:db8::1:0:0:1")
        XCTAssertEqual(PocketTimings.ipv6Text([0x2001, 0xdb8, 1, 2, 3, 4, 5, 6]), "2001:db8:1:2:3:4:5:6")
        XCTAssertEqual(PocketTimings.ipv6Text([0xfe80, 0, 0, 0, 0, 0, 0, 0]), "fe80::")
    }
}
