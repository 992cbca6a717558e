import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// CR, LF or NUL in any part of the head is refused before a byte is sent.
final class RequestValidationTests: XCTestCase {
    func testInjectionIsRejectedBeforeAnythingIsSent() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        let base = url(server, "/")

        var r = PocketRequest(url: base)
        r.headers["X-Evil"] = "a\r\nX-Injected: 1"
        await assertPocketError(.invalidHeaderValue) { try await client.send(r) }
        r.headers["X-Evil"] = "a\nb"
        await assertPocketError(.invalidHeaderValue) { try await client.send(r) }
        r.headers["X-Evil"] = "a\0b"
        await assertPocketError(.invalidHeaderValue) { try await client.send(r) }

        var n = PocketRequest(url: base)
        n.headers["X-Evil\r\nX-Injected"] = "1"
        await assertPocketError(.invalidHeaderName) { try await client.send(n) }
        n = PocketRequest(url: base)
        n.headers["Bad Name"] = "1"
        await assertPocketError(.invalidHeaderName) { try await client.send(n) }
        n = PocketRequest(url: base)
        n.headers[""] = "1"
        await assertPocketError(.invalidHeaderName) { try await client.send(n) }

        await assertPocketError(.invalidMethod) { try await client.send(PocketRequest(method: "GET /x HTTP/1.1\r\n", url: base)) }
        await assertPocketError(.invalidMethod) { try await client.send(PocketRequest(method: "", url: base)) }

        XCTAssertEqual(server.acceptedConnections, 0, "nothing reached the server")
        XCTAssertEqual(server.requestCount, 0)

        // And a clean request still works afterwards.
        let ok = try await client.send(PocketRequest(url: base))
        XCTAssertEqual(ok.status, 200)
    }

    func testCustomMethodIsSent() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { req in .text(req.method) }
        let client = try makeClient()
        let response = try await client.send(PocketRequest(method: "PURGE", url: url(server, "/")))
        XCTAssertEqual(response.text, "PURGE")
    }

    func testUnsupportedSchemeAndMissingHost() async throws {
        let client = try makeClient()
        await assertPocketError(.unsupportedScheme) { try await client.send(PocketRequest(url: URL(string: "ftp://example.com/")!)) }
        await assertPocketError(.invalidURL) { try await client.send(PocketRequest(url: URL(string: "http:///path")!)) }
        await assertPocketError(.invalidURL) { try PocketRequest("http://exa mple.com:99999999/") }
    }

    func testConnectionRefusedIsItsOwnError() async throws {
        // Bind a port, then close it: nothing listens there.
        let server = try TestServer()
        let port = server.port
        server.shutdown()
        let client = try makeClient()
        let error = await assertPocketError(.connectionRefused) {
            try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:\(port)/")!))
        }
        XCTAssertEqual(error?.systemError, ECONNREFUSED)
    }

    func testErrorCodesHaveDistinctNamesAndMessages() {
        let codes: [PocketError.Code] = [.connectionRefused, .connectTimeout, .readTimeout, .totalTimeout, .deadlineExceeded,
                                         .dnsFailure, .truncatedBody, .badChunk, .responseHeadTooLarge,
                                         .tooManyHeaders, .cancelled, .shutdown]
        XCTAssertEqual(Set(codes.map(\.name)).count, codes.count)
        let e = PocketError.engine(12, errno: 0)
        XCTAssertEqual(e.code, .connectionRefused)
        XCTAssertFalse(e.message.isEmpty)
    }
}
