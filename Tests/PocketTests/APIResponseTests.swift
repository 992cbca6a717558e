import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Validation, empty bodies, decoding errors and the response's details.
final class APIResponseTests: XCTestCase {
    private var server: TestServer!
    private var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        client = try makeClient { $0.baseURL = URL(string: self.server.baseURL)! }
        server.route("/missing") { _ in
            .response(status: 404, headers: [("Content-Type", "application/problem+json")],
                      body: Array(#"{"title":"no such needle"}"#.utf8))
        }
        server.route("/html") { _ in .response(headers: [("Content-Type", "text/html")], body: Array("<p>hi</p>".utf8)) }
        server.route("/untyped") { _ in .response(body: Array("{}".utf8)) }
        server.route("/json") { _ in .response(headers: [("Content-Type", "application/json")], body: Array(#"{"a":1}"#.utf8)) }
        server.route("/nocontent") { _ in .response(status: 204) }
        server.route("/reset") { _ in .response(status: 205) }
        server.route("/empty") { _ in .response(headers: [("Content-Type", "application/json")]) }
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        // XCTest keeps every test case object until the run ends: drop the
        // engine here so its threads are joined now.
        client = nil
        server = nil
    }

    func testSendReturnsAnyStatusUnlessValidationIsAsked() async throws {
        let plain = try await client.send(try client.request(.get, "missing"))
        XCTAssertEqual(plain.httpStatus, .notFound)
        XCTAssertEqual(plain.httpStatus.name, "Not Found")

        // Per request.
        var request = try client.request(.get, "missing")
        request.validation = PocketValidation()
        let error = await assertPocketError(.unacceptableStatus) { try await self.client.send(request) }
        XCTAssertEqual(error?.response?.status, 404)
        XCTAssertEqual(error?.response?.headers["Content-Type"], "application/problem+json")
        XCTAssertEqual(error?.body.map { String(decoding: $0, as: UTF8.self) }, #"{"title":"no such needle"}"#)
        XCTAssertTrue(error?.message.contains("404 Not Found") ?? false, error?.message ?? "")
        XCTAssertTrue(error?.message.contains("no such needle") ?? false, error?.message ?? "")

        // Per request, accepting 404.
        request.validation = PocketValidation(statusCodes: [200..<300, 404..<405])
        let accepted = try await client.send(request)
        XCTAssertEqual(accepted.status, 404, "problem+json matches the JSON format's +json")

        // Per client; the request's own validation wins.
        let strict = try makeClient {
            $0.baseURL = URL(string: self.server.baseURL)!
            $0.validation = PocketValidation()
        }
        await assertPocketError(.unacceptableStatus) { try await strict.send(try strict.request(.get, "missing")) }
        let lenient = try strict.request(.get, "missing")
        var own = lenient
        own.validation = .status([200..<500])
        _ = try await strict.send(own)
        // A scoped client can turn it off for its requests.
        let loose = try strict.scoped(validation: .status([100..<600]))
        _ = try await loose.send(lenient)
        try await strict.shutdown()
    }

    func testContentTypeValidation() async throws {
        let html = try await client.send(try client.request(.get, "html"))
        let e1 = await assertPocketError(.unacceptableContentType) { try html.validate() }
        XCTAssertEqual(e1?.body, Data("<p>hi</p>".utf8))
        XCTAssertEqual(e1?.response?.status, 200)
        XCTAssertNoThrow(try html.validate(PocketValidation(contentTypes: ["text/*"])))
        XCTAssertNoThrow(try html.validate(PocketValidation(contentTypes: ["text/html"])))
        XCTAssertNoThrow(try html.validate(.status()))

        let untyped = try await client.send(try client.request(.get, "untyped"))
        await assertPocketError(.unacceptableContentType) { try untyped.validate() }
        XCTAssertNoThrow(try untyped.validate(PocketValidation(contentTypes: ["*/*"])))

        // The format's types: text format accepts text/html, JSON does not.
        let asText = try await client.send(try client.request(.get, "html", format: .text))
        XCTAssertNoThrow(try asText.validate())
        let json = try await client.send(try client.request(.get, "json"))
        XCTAssertNoThrow(try json.validate())
        let asXML = try await client.send(try client.request(.get, "json", format: .xml))
        await assertPocketError(.unacceptableContentType) { try asXML.validate() }
        XCTAssertEqual(server.receivedRequests.last?.header("Accept"), "application/xml")
    }

    func testEmptyBodiesDecodeAsEmptyOrNil() async throws {
        struct Thing: Decodable { var a: Int }
        for path in ["nocontent", "reset", "empty"] {
            let response = try await client.send(try client.request(.get, path))
            XCTAssertTrue(response.body.isEmpty, path)
            XCTAssertNoThrow(try response.validate(), path)
            XCTAssertEqual(try response.decode(PocketEmpty.self), PocketEmpty(), path)
            XCTAssertNil(try response.decode(Thing?.self), path)
            let e = await assertPocketError(.decodingFailed) { try response.decode(Thing.self) }
            XCTAssertTrue(e?.message.contains("empty body") ?? false, e?.message ?? "")
        }
        let head = try await client.send(try client.request(.head, "json"))
        XCTAssertEqual(head.headers["Content-Length"], "7")
        XCTAssertEqual(try head.validate().decode(PocketEmpty.self), PocketEmpty())
        XCTAssertNil(try head.decode([String: Int]?.self))
        // A non-empty body still decodes into an optional.
        let json = try await client.send(try client.request(.get, "json"))
        XCTAssertEqual(try json.decode([String: Int]?.self), ["a": 1])
    }

    func testDecodingErrorsNameTheJSONPath() async throws {
        let body = #"{"groups":{"7":{"x":"a"}},"root_key":1,"issues":[{"id":1,"category":{"id":24,"name":"Docs"},"tags":["a"]},{"id":"two","category":null,"tags":["b",3]}]}"#
        server.route("/issues") { _ in .response(headers: [("Content-Type", "application/json")], body: Array(body.utf8)) }
        let response = try await client.send(try client.request(.get, "issues"))

        struct Category: Decodable { var id: Int; var name: String }
        struct NeedsCategory: Decodable { var issues: [Item]; struct Item: Decodable { var category: Category } }
        struct NeedsIntID: Decodable { var issues: [Item]; struct Item: Decodable { var id: Int } }
        struct NeedsStringTags: Decodable { var issues: [Item]; struct Item: Decodable { var tags: [String] } }
        struct NeedsMissing: Decodable { var issues: [Item]; struct Item: Decodable { var owner: String } }
        struct NeedsIntX: Decodable { var groups: [String: Group]; struct Group: Decodable { var x: Int } }

        let cases: [(String, () throws -> Any)] = [
            ("root.issues[1].category", { try response.decode(NeedsCategory.self) }),
            ("root.issues[1].id", { try response.decode(NeedsIntID.self) }),
            ("root.issues[1].tags[1]", { try response.decode(NeedsStringTags.self) }),
            ("root.issues[0].owner", { try response.decode(NeedsMissing.self) }),
            ("root.groups.7.x", { try response.decode(NeedsIntX.self) }),
        ]
        for (path, decode) in cases {
            let error = await assertPocketError(.decodingFailed) { try decode() }
            XCTAssertTrue(error?.message.contains(path) ?? false, "\(path): \(error?.message ?? "")")
            XCTAssertTrue(error?.underlying is DecodingError)
            XCTAssertEqual(error?.response?.status, 200)
            XCTAssertEqual(error?.body, Data(body.utf8))
        }

        server.route("/broken") { _ in .response(headers: [("Content-Type", "application/json")], body: Array("{\"a\":".utf8)) }
        let broken = try await client.send(try client.request(.get, "broken"))
        let e = await assertPocketError(.decodingFailed) { try broken.decode([String: Int].self) }
        XCTAssertTrue(e?.message.contains("not valid JSON") ?? false, e?.message ?? "")

        // Text formats decode text and bytes only.
        let html = try await client.send(try client.request(.get, "html", format: .text))
        XCTAssertEqual(try html.decode(String.self), "<p>hi</p>")
        await assertPocketError(.decodingFailed) { try html.decode([String: Int].self) }
    }

    func testResponseDetails() async throws {
        server.route("/latin1") { req in
            .response(headers: [("Content-Type", "Text/Plain ; charset=ISO-8859-1"), ("X-Total", " 12 ")],
                      body: [0x63, 0x61, 0x66, 0xE9])
        }
        let request = try client.request(.post, "latin1", body: .text("ping"))
        let response = try await client.send(request)
        XCTAssertEqual(response.mimeType, "text/plain")
        XCTAssertEqual(response.text, "café")
        XCTAssertEqual(response.expectedContentLength, 4)
        XCTAssertEqual(response.expectedContentLength(header: "x-total"), 12)
        XCTAssertNil(response.expectedContentLength(header: "X-None"))
        XCTAssertEqual(response.requestText, "ping")
        XCTAssertEqual(response.requestData, Data("ping".utf8))
        XCTAssertEqual(response.request?.method, .post)
        XCTAssertEqual(response.format, .json)
        XCTAssertEqual(response.head.status, 200)
        XCTAssertEqual(PocketStatus(418).name, "")
        XCTAssertEqual(PocketStatus(503).kind, .serverError)
        XCTAssertEqual(String(describing: PocketStatus.created), "201 Created")
    }
}
