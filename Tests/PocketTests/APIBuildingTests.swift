import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Paths, queries, URL resolution, bodies and auth, checked on the wire.
final class APIBuildingTests: XCTestCase {
    private var server: TestServer!
    private var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        server.defaultHandler = { req in .text(req.target) }
        client = try makeClient()
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        // XCTest keeps every test case object until the run ends: drop the
        // engine here so its threads are joined now.
        client = nil
        server = nil
    }

    /// Sends `request` and returns the target the server received.
    private func target(_ request: PocketRequest, file: StaticString = #filePath, line: UInt = #line) async throws -> String {
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 200, file: file, line: line)
        let got = try XCTUnwrap(server.receivedRequests.last, file: file, line: line)
        XCTAssertEqual(response.text, got.target, file: file, line: line)
        return got.target
    }

    func testPathTemplatesTable() async throws {
        let base = URL(string: server.baseURL)!
        let cases: [(String, [PocketParameterValue], [String: PocketParameterValue], String)] = [
            // MTPocket :placeholders, in order; arrays comma-joined; leftovers removed
            ("companies/:company_id/employee/:id", [3, [2, 4]], [:], "/companies/3/employee/2,4"),
            ("companies/:company_id/employee/:id", [3], [:], "/companies/3/employee"),
            ("companies/:company_id/employee/:id", [], [:], "/companies/employee"),
            ("companies/:company_id/employee/:id", [nil, 5], [:], "/companies/employee/5"),
            ("companies/:company_id/employee/:id", [3, []], [:], "/companies/3/employee"),
            ("needles/:id.json", [7], [:], "/needles/7.json"),
            ("needles/:id", ["a b/c?d#e%"], [:], "/needles/a%20b%2Fc%3Fd%23e%25"),
            ("needles/:id", [".."], [:], "/needles/%2E%2E"),
            ("needles/:id", ["é,x"], [:], "/needles/%C3%A9%2Cx"),
            ("v1/projects/p:run", [], [:], "/v1/projects/p:run"),
            // TyphoonRestClient {placeholders}; the unused parameters become the query
            ("issues/{issue_id}.json", [], ["issue_id": 42], "/issues/42.json"),
            ("issues/{issue_id}.json", [], ["issue_id": 42, "include": "journals"], "/issues/42.json?include=journals"),
            ("users/{name}", [], ["name": "Ada Lovelace/1"], "/users/Ada%20Lovelace%2F1"),
            ("users/{ids}", [], ["ids": [1, 2]], "/users/1,2"),
            // both styles, and a literal query
            ("a/:x/{y}/b?z=1 2", [5], ["y": "w", "q": true], "/a/5/w/b?z=1%202&q=true"),
            ("/leading//double///slashes/", [], [:], "/leading/double/slashes/"),
            // literal text is taken as encoded; what a path cannot carry is encoded, a stray % too
            ("files/100%/a b%2Fc\"", [], [:], "/files/100%25/a%20b%2Fc%22"),
        ]
        for (path, identifiers, parameters, expected) in cases {
            let request = try PocketRequest(path: path, baseURL: base, identifiers: identifiers, parameters: parameters)
            let got = try await target(request)
            XCTAssertEqual(got, expected, "\(path) \(identifiers) \(parameters)")
        }
    }

    func testQueryEncodingTable() async throws {
        let base = URL(string: server.baseURL + "/q")!
        let list: PocketParameterValue = [1, "two words", "x,y"]
        let cases: [(PocketQueryEncoding, [String: PocketParameterValue], String)] = [
            (PocketQueryEncoding(), ["a": list], "a%5B%5D=1&a%5B%5D=two%20words&a%5B%5D=x%2Cy"),
            (PocketQueryEncoding(arrayStyle: .indexed), ["a": list], "a%5B0%5D=1&a%5B1%5D=two%20words&a%5B2%5D=x%2Cy"),
            (PocketQueryEncoding(arrayStyle: .repeated), ["a": list], "a=1&a=two%20words&a=x%2Cy"),
            (PocketQueryEncoding(arrayStyle: .commaSeparated), ["a": list], "a=1,two%20words,x%2Cy"),
            (PocketQueryEncoding(), ["a": ["b": 1, "c": ["d": "e"]]], "a%5Bb%5D=1&a%5Bc%5D%5Bd%5D=e"),
            (PocketQueryEncoding(), ["a": [["b": 1], ["b": 2]]], "a%5B0%5D%5Bb%5D=1&a%5B1%5D%5Bb%5D=2"),
            (PocketQueryEncoding(), ["k&=?#": "v&=?#/+ ~é"], "k%26%3D%3F%23=v%26%3D%3F%23%2F%2B%20~%C3%A9"),
            (PocketQueryEncoding(), ["t": true, "f": false, "n": nil, "d": 1.5], "d=1.5&f=false&t=true"),
            (PocketQueryEncoding(boolStyle: .numeric), ["t": true, "f": false], "f=0&t=1"),
            (PocketQueryEncoding(), ["b": 2, "a": 1, "c": 3], "a=1&b=2&c=3"),
            (PocketQueryEncoding(arrayStyle: .commaSeparated), ["e": [], "f": [nil], "g": [:], "h": 1], "h=1"),
            (PocketQueryEncoding(), ["e": [], "h": [nil, 1]], "h%5B%5D=1"),
        ]
        for (encoding, parameters, expected) in cases {
            let request = try PocketRequest(path: "", baseURL: base, parameters: parameters, queryEncoding: encoding)
            let got = try await target(request)
            XCTAssertEqual(got, "/q?" + expected, "\(encoding) \(parameters)")
            // The server decodes what the client encoded back to the same fields.
            XCTAssertEqual(URLComponents(string: got)?.percentEncodedQuery, expected)
        }
        let decoded = URLComponents(string: try await target(try PocketRequest(path: "", baseURL: base,
                                                                         parameters: ["k&=?#": "v&=?#/+ ~é"])))
        XCTAssertEqual(decoded?.queryItems, [URLQueryItem(name: "k&=?#", value: "v&=?#/+ ~é")])
    }

    func testURLResolutionTable() async throws {
        let root = server.baseURL
        let cases: [(String?, String, String)] = [
            (root, "needles", "/needles"),
            (root + "/", "/needles", "/needles"),
            (root + "/api/v1", "needles", "/api/v1/needles"),
            (root + "/api/v1/", "needles", "/api/v1/needles"),
            (root + "/api/v1", "/needles", "/api/v1/needles"),
            (root + "/api/v1//", "//needles//", "/api/v1/needles/"),
            (root + "/api/v1", "", "/api/v1"),
            (root + "/api?key=1", "needles?page=2", "/api/needles?key=1&page=2"),
            ("http://192.0.2.1:9/ignored", root + "/absolute//wins", "/absolute/wins"),
            (nil, root + "/no-base", "/no-base"),
        ]
        for (base, path, expected) in cases {
            let request = try PocketRequest(path: path, baseURL: base.map { URL(string: $0)! })
            let got = try await target(request)
            XCTAssertEqual(got, expected, "\(base ?? "nil") + \(path)")
        }
    }

    func testBuildingErrors() async throws {
        let base = URL(string: server.baseURL)!
        await assertPocketError(.missingPathParameter) { try PocketRequest(path: "issues/{issue_id}.json", baseURL: base) }
        let missing = await assertPocketError(.missingPathParameter) {
            try PocketRequest(path: "issues/{issue_id}.json", baseURL: base, parameters: ["issue_id": nil])
        }
        XCTAssertTrue(missing?.message.contains("{issue_id}") ?? false, missing?.message ?? "")
        await assertPocketError(.invalidPathTemplate) { try PocketRequest(path: "issues/{issue_id", baseURL: base) }
        await assertPocketError(.invalidPathTemplate) { try PocketRequest(path: "a/{}", baseURL: base) }
        await assertPocketError(.invalidPathTemplate) { try PocketRequest(path: "a/:id", baseURL: base, identifiers: [1, 2]) }
        await assertPocketError(.invalidPathTemplate) {
            try PocketRequest(path: "a/:id", baseURL: base, identifiers: [["x": 1]])
        }
        await assertPocketError(.invalidURL) { try PocketRequest(path: "relative", baseURL: nil) }
        await assertPocketError(.unsupportedScheme) { try PocketRequest(path: "ftp://example.com/x", baseURL: nil) }
        await assertPocketError(.unsupportedScheme) { try PocketRequest(path: "x", baseURL: URL(string: "file:///tmp")!) }
        await assertPocketError(.unknownTemplate) { try self.client.request(.get, "x", template: "nope") }
        XCTAssertEqual(server.requestCount, 0, "nothing is sent for a request that cannot be built")
    }

    func testFormatSetsAcceptAndContentTypeAndBodiesEncode() async throws {
        server.route("/echo") { req in
            .response(headers: [("Content-Type", req.header("Content-Type") ?? "none")], body: req.body)
        }
        let base = URL(string: server.baseURL)!
        struct Item: Codable, Equatable { var name: String; var tags: [String]; var url: String }
        let item = Item(name: "pocket", tags: ["a", "b"], url: "http://x/y")

        let json = try PocketRequest(.post, path: "echo", baseURL: base, body: try .json(item))
        let r1 = try await client.send(json)
        XCTAssertEqual(r1.text, #"{"name":"pocket","tags":["a","b"],"url":"http://x/y"}"#)
        XCTAssertEqual(server.receivedRequests.last?.header("Accept"), "application/json")
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Type"), "application/json")
        XCTAssertEqual(try r1.decode(Item.self), item)
        XCTAssertEqual(r1.requestText, r1.text)

        let form = try PocketRequest(.post, path: "echo", baseURL: base,
                               body: .form(["user": "ada lovelace", "pw": "a+b&c=d", "ids": [1, 2], "none": nil]),
                               format: .form)
        let r2 = try await client.send(form)
        XCTAssertEqual(r2.text, "ids%5B%5D=1&ids%5B%5D=2&pw=a%2Bb%26c%3Dd&user=ada+lovelace")
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(server.receivedRequests.last?.header("Accept"), "*/*")

        let text = try PocketRequest(.put, path: "echo", baseURL: base, headers: ["Content-Type": "text/csv"],
                               body: .text("a,b\n1,2\n"), format: .text)
        let r3 = try await client.send(text)
        XCTAssertEqual(r3.text, "a,b\n1,2\n")
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Type"), "text/csv", "an explicit header wins")
        XCTAssertEqual(server.receivedRequests.last?.header("Accept"), "text/plain")

        let raw = try PocketRequest(.post, path: "echo", baseURL: base, body: .bytes(Data([0, 1, 255])), format: .binary)
        let r4 = try await client.send(raw)
        XCTAssertEqual(try r4.decode(Data.self), Data([0, 1, 255]))
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Type"), "application/octet-stream")

        let get = try PocketRequest(path: "echo", baseURL: base)
        _ = try await client.send(get)
        XCTAssertNil(server.receivedRequests.last?.header("Content-Type"), "no body, no Content-Type")

        await assertPocketError(.encodingFailed) { try PocketRequestBody.json(["x": Double.nan]) }
    }

    func testAuthorizationHelpers() async throws {
        let base = URL(string: server.baseURL)!
        var request = try PocketRequest(path: "auth", baseURL: base)
        request.headers.authorize(try .basic(username: "Aladdin", password: "open sesame"))
        _ = try await client.send(request)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")

        request.headers.authorize(try .basic(username: "ünï", password: "pa:ss"))
        _ = try await client.send(request)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"),
                       "Basic " + Data("ünï:pa:ss".utf8).base64EncodedString())

        request.headers.authorize(try .bearer("mF_9.B5f-4.1JqM"))
        _ = try await client.send(request)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"), "Bearer mF_9.B5f-4.1JqM")

        request.headers.authorize(try .token(#"ab"c\d"#))
        _ = try await client.send(request)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"), #"Token token="ab\"c\\d""#)

        request.headers = try .basicAuthorization(username: "u", password: "p")
        _ = try await client.send(request)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"), "Basic dTpw")

        // user:password@ in the URL: Basic with the percent-decoded credentials.
        let withUser = try PocketRequest(path: "http://ad%40a:p%3Aw%20d@127.0.0.1:\(server.port)/auth", baseURL: nil)
        _ = try await client.send(withUser)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"),
                       "Basic " + Data("ad@a:p:w d".utf8).base64EncodedString())
        // A base URL's credentials go with the paths resolved against it.
        let based = try PocketRequest(path: "auth", baseURL: URL(string: "http://u%20x:pw@127.0.0.1:\(server.port)/")!)
        _ = try await client.send(based)
        XCTAssertEqual(server.receivedRequests.last?.header("Authorization"),
                       "Basic " + Data("u x:pw".utf8).base64EncodedString())
        // An explicit header wins over the URL's.
        var both = withUser
        both.headers.authorize(try .bearer("tok"))
        _ = try await client.send(both)
        XCTAssertEqual(server.receivedRequests.last?.headerValues("Authorization"), ["Bearer tok"])

        await assertPocketError(.invalidCredentials) { try PocketAuthorization.basic(username: "a:b", password: "c") }
        await assertPocketError(.invalidCredentials) { try PocketAuthorization.basic(username: "a", password: "c\r\nX: 1") }
        await assertPocketError(.invalidCredentials) { try PocketAuthorization.bearer("has space") }
        await assertPocketError(.invalidCredentials) { try PocketAuthorization.bearer("") }
        await assertPocketError(.invalidCredentials) { try PocketAuthorization.token("a\nb") }
        XCTAssertFalse(String(describing: try PocketAuthorization.bearer("secret")).contains("secret"))
    }

    func testArchivedRequestRoundTrip() async throws {
        let base = URL(string: server.baseURL)!
        var request = try PocketRequest(PocketMethod("PURGE"), path: "cache/:id", baseURL: base, identifiers: [9],
                                  parameters: ["deep": true], headers: ["X-Trace": "1"],
                                  body: try .json(["k": "v"]))
        request.timeouts = PocketTimeouts(connect: .seconds(3), read: .seconds(4), total: nil)
        request.validation = PocketValidation(statusCodes: [200..<300, 404..<405], contentTypes: ["text/*"])
        request.expectContinue = .milliseconds(250)

        let archived = try JSONEncoder().encode(request)
        let restored = try JSONDecoder().decode(PocketRequest.self, from: archived)
        XCTAssertEqual(restored, request)
        XCTAssertEqual(restored.hashValue, request.hashValue)
        XCTAssertEqual(Set([request, restored]).count, 1)
        XCTAssertEqual(restored.format, .json)
        XCTAssertEqual(restored.method.rawValue, "PURGE")

        let response = try await client.send(restored)
        XCTAssertEqual(response.status, 200)
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.method, "PURGE")
        XCTAssertEqual(got.target, "/cache/9?deep=true")
        XCTAssertEqual(got.header("X-Trace"), "1")
        XCTAssertEqual(got.bodyText, #"{"k":"v"}"#)
        XCTAssertEqual(response.request, restored)

        // A template is a value too.
        var template = PocketRequestTemplate(baseURL: base, format: .xml, query: ["s": ["a", 1, nil, ["k": 2.5]]])
        template.headers.authorize(try .token("t"))
        let copy = try JSONDecoder().decode(PocketRequestTemplate.self, from: try JSONEncoder().encode(template))
        XCTAssertEqual(copy, template)
    }
}
