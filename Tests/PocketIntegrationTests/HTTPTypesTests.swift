import Foundation
import HTTPTypes
import XCTest
import Pocket
import PocketHTTPTypes
import PocketTestSupport

/// `HTTPRequest` in, `HTTPResponse` out, through real sockets.
final class HTTPTypesTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    func testSendCarriesMethodTargetFieldsAndBody() async throws {
        server.route("/items") { request in
            .response(status: 201, headers: [("X-Seen", request.header("X-Token") ?? "none"), ("Set-Cookie", "a=1"),
                                             ("Set-Cookie", "b=2"), ("Content-Type", "application/json")],
                      body: Array("{\"got\":\(request.body.count)}".utf8))
        }
        let client = try makeIntegrationClient()
        var request = HTTPRequest(method: .post, scheme: "http", authority: authority(server), path: "/items?page=2")
        request.headerFields[.contentType] = "application/json"
        request.headerFields[HTTPField.Name("X-Token")!] = "t-1"
        let (response, body) = try await client.send(request, body: .text(#"{"name":"pocket"}"#))

        XCTAssertEqual(response.status.code, 201)
        XCTAssertEqual(response.status.reasonPhrase, "Created")
        XCTAssertEqual(response.headerFields[HTTPField.Name("X-Seen")!], "t-1")
        XCTAssertEqual(response.headerFields[values: .setCookie], ["a=1", "b=2"], "repeated fields kept, in order")
        XCTAssertEqual(String(decoding: body, as: UTF8.self), #"{"got":17}"#)

        let seen = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(seen.method, "POST")
        XCTAssertEqual(seen.target, "/items?page=2")
        XCTAssertEqual(seen.header("Content-Type"), "application/json")
        XCTAssertEqual(seen.header("Host"), authority(server))
        XCTAssertEqual(seen.bodyText, #"{"name":"pocket"}"#)
    }

    func testStreamReturnsAtTheHeadAndDeliversTheBodyByteExact() async throws {
        let size = 3 << 20 | 17
        server.route("/big") { _ in .generated(size: size, seed: 5, headers: [("Content-Type", "application/octet-stream")]) }
        let client = try makeIntegrationClient()
        let (response, body) = try await client.stream(
            HTTPRequest(method: .get, scheme: "http", authority: authority(server), path: "/big"), bufferSize: 64 << 10)
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.headerFields[.contentLength], String(size))
        XCTAssertEqual(response.headerFields[.contentType], "application/octet-stream")
        let hasher = SHA256Hasher()
        var count = 0, chunks = 0
        for try await chunk in body {
            chunk.withUnsafeBytes { hasher.update($0) }
            count += chunk.count
            chunks += 1
            XCTAssertLessThanOrEqual(body.bufferedBytes, 64 << 10 + 256 << 10, "bounded by the buffer size")
        }
        XCTAssertEqual(count, size)
        XCTAssertGreaterThan(chunks, 1)
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 5, size: size))
    }

    func testStreamedUploadBodyArrivesWhole() async throws {
        server.route("/up") { request in .text("\(request.bodyLength) \(request.bodySHA256)") }
        let pieces = (0..<8).map { Data(BytePattern.bytes(seed: 9, range: $0 * 10_000..<($0 + 1) * 10_000)) }
        let chunks = AsyncStream<Data> { continuation in
            for piece in pieces { continuation.yield(piece) }
            continuation.finish()
        }
        let client = try makeIntegrationClient()
        let (response, body) = try await client.send(
            HTTPRequest(method: .put, scheme: "http", authority: authority(server), path: "/up"),
            body: .stream(chunks, length: nil))
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "80000 \(BytePattern.sha256(seed: 9, size: 80_000))")
        XCTAssertEqual(server.receivedRequests.last?.header("Transfer-Encoding"), "chunked")
    }

    func testTheRequestTakesTheOneRequestPath() async throws {
        server.route("/mw") { request in .text(request.header("X-From-Middleware") ?? "missing") }
        let client = try makeIntegrationClient { config in
            config.handling.middleware = [PocketClosureMiddleware(adapt: { request, _ in
                var request = request
                request.headers["X-From-Middleware"] = "yes"
                return request
            })]
        }
        let (_, body) = try await client.send(HTTPRequest(method: .get, scheme: "http", authority: authority(server), path: "/mw"))
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "yes")
    }

    func testARequestWithoutAuthorityOrWithAnotherSchemeIsRefused() async throws {
        let client = try makeIntegrationClient()
        let missing = await expectPocketError(.invalidURL) {
            try await client.send(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/x"))
        }
        XCTAssertTrue(missing?.message.contains("authority: none") ?? false, "\(String(describing: missing))")
        let scheme = await expectPocketError(.unsupportedScheme) {
            try await client.send(HTTPRequest(method: .get, scheme: "ftp", authority: "127.0.0.1:21", path: "/x"))
        }
        XCTAssertTrue(scheme?.message.contains("ftp://127.0.0.1:21/x") ?? false, "\(String(describing: scheme))")
        XCTAssertEqual(server.requestCount, 0)
    }

    func testFieldsConvertBothWaysInOrder() {
        let headers: PocketHeaders = PocketHeaders([("Accept", "a"), ("X-Multi", "1"), ("x-multi", "2"), ("Content-Type", "text/plain")])
        let fields = HTTPFields(headers)
        XCTAssertEqual(fields.map(\.name.rawName), ["Accept", "X-Multi", "x-multi", "Content-Type"])
        XCTAssertEqual(fields[values: HTTPField.Name("x-multi")!], ["1", "2"])
        XCTAssertEqual(PocketHeaders(fields), headers)
        XCTAssertEqual(HTTPFields(PocketHeaders([("bad name", "v"), ("Good", "v")])).map(\.name.rawName), ["Good"])
    }
}
