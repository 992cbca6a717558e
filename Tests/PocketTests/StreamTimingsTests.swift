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
}
