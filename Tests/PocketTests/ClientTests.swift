import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

final class ClientTests: XCTestCase {
    func testGetReturnsStatusHeadersBodyAndTimings() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/hello") { _ in .text("Hello, World!", headers: [("X-Test", "1")]) }
        let client = try makeClient()
        let response = try await client.send(PocketRequest(url: url(server, "/hello")))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.reason, "OK")
        XCTAssertEqual(response.text, "Hello, World!")
        XCTAssertEqual(response.headers["x-test"], "1")
        XCTAssertEqual(response.headers["content-length"], "13")
        XCTAssertGreaterThan(response.timings.total, .zero)
        XCTAssertGreaterThan(response.timings.firstByte, .zero)
        XCTAssertFalse(response.timings.reusedConnection)
        XCTAssertEqual(response.timings.wireBytesReceived, response.timings.bytesReceived, "plain HTTP: the wire is the payload")
        let second = try await client.send(PocketRequest(url: url(server, "/hello")))
        XCTAssertTrue(second.timings.reusedConnection)
        XCTAssertEqual(second.timings.connect, .zero)
    }

    func testRequestLineHostHeadersAndBodyOnTheWire() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/echo") { req in .response(body: req.body) }
        let client = try makeClient()
        var request = PocketRequest(method: .post, url: url(server, "/echo?a=1%202&b"))
        request.headers.add(name: "X-One", value: "1")
        request.headers.add(name: "X-One", value: "2")
        request.body = .bytes(Data("payload".utf8))
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "payload")
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.method, "POST")
        XCTAssertEqual(got.target, "/echo?a=1%202&b")
        XCTAssertEqual(got.header("Host"), "127.0.0.1:\(server.port)")
        XCTAssertEqual(got.headerValues("X-One"), ["1", "2"])
        XCTAssertEqual(got.header("Content-Length"), "7")
        XCTAssertEqual(got.header("User-Agent"), "Pocket/0.2.0")
    }

    func testEmptyBodySendsContentLengthZeroAndGetSendsNone() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        _ = try await client.send(PocketRequest(method: .post, url: url(server, "/"), body: .bytes(Data())))
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Length"), "0")
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertNil(server.receivedRequests.last?.header("Content-Length"))
    }

    func testLargeBodiesBothWays() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/echo") { req in .response(body: req.body) }
        let client = try makeClient()
        let payload = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let response = try await client.send(PocketRequest(method: .put, url: url(server, "/echo"), body: .bytes(payload)))
        XCTAssertEqual(response.body.count, payload.count)
        XCTAssertEqual(response.body, payload)
    }

    func testChunkedResponseWithTrailers() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/c") { _ in
            .chunked(chunks: [Array("Hello, ".utf8), Array("chunked ".utf8), Array("world".utf8)],
                     trailers: [("X-Checksum", "abc")])
        }
        let client = try makeClient()
        for _ in 0..<3 {
            let response = try await client.send(PocketRequest(url: url(server, "/c")))
            XCTAssertEqual(response.text, "Hello, chunked world")
        }
        XCTAssertEqual(server.acceptedConnections, 1)
    }

    func testHeadAnd204And304HaveNoBody() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/h") { _ in .response(headers: [("Content-Length", "100")], body: []) }
        server.route("/204") { _ in .response(status: 204) }
        server.route("/304") { _ in .response(status: 304, headers: [("ETag", "\"x\"")]) }
        let client = try makeClient()
        let head = try await client.send(PocketRequest(method: .head, url: url(server, "/h")))
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body.count, 0)
        XCTAssertEqual(head.headers["Content-Length"], "100")
        let noContent = try await client.send(PocketRequest(url: url(server, "/204")))
        XCTAssertEqual(noContent.status, 204)
        let notModified = try await client.send(PocketRequest(url: url(server, "/304")))
        XCTAssertEqual(notModified.status, 304)
        XCTAssertEqual(notModified.body.count, 0)
        XCTAssertEqual(server.acceptedConnections, 1, "no-body responses keep the connection")
    }

    func testInterimResponsesAreSkipped() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/i") { _ in
            .raw([.sendString("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"),
                  .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
        }
        server.route("/many") { _ in
            .raw([.sendString(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 9)),
                  .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
        }
        let client = try makeClient()
        let response = try await client.send(PocketRequest(url: url(server, "/i")))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "ok")
        await assertPocketError(.tooManyInterimResponses) { try await client.send(PocketRequest(url: url(server, "/many"))) }
    }

    func testCloseDelimitedBody() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/close") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\n\r\nall of "), .sleep(milliseconds: 20), .sendString("it"), .close])
        }
        let client = try makeClient()
        let response = try await client.send(PocketRequest(url: url(server, "/close")))
        XCTAssertEqual(response.text, "all of it")
    }

    func testHTTP10WithoutKeepAliveClosesAndWithKeepAliveReuses() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/10") { _ in .raw([.sendString("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")]) }
        server.route("/10ka") { _ in
            .raw([.sendString("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok")])
        }
        let client = try makeClient()
        for _ in 0..<3 { _ = try await client.send(PocketRequest(url: url(server, "/10"))) }
        XCTAssertEqual(server.acceptedConnections, 3)
        for _ in 0..<3 { _ = try await client.send(PocketRequest(url: url(server, "/10ka"))) }
        XCTAssertEqual(server.acceptedConnections, 4)
    }

    func testIPv6LoopbackAndLocalhostName() async throws {
        let client = try makeClient()
        let server6 = try TestServer(host: "::1")
        defer { server6.shutdown() }
        server6.route("/") { _ in .text("six") }
        let six = try await client.send(PocketRequest(url: URL(string: "http://[::1]:\(server6.port)/")!))
        XCTAssertEqual(six.text, "six")
        XCTAssertEqual(server6.receivedRequests.last?.header("Host"), "[::1]:\(server6.port)")
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("name") }
        let response = try await client.send(PocketRequest(url: URL(string: "http://localhost:\(server.port)/")!))
        XCTAssertEqual(response.text, "name")
    }

    func testUserInfoBecomesBasicAuth() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        _ = try await client.send(PocketRequest(url: URL(string: "http://user:pa%3Ass@127.0.0.1:\(server.port)/")!))
        // base64("user:pa:ss")
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"), "Basic dXNlcjpwYTpzcw==")
    }
}
