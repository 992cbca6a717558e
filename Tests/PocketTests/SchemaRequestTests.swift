import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The endpoint type whose name finds `RequestToGetIssue.path.json`.
struct RequestToGetIssue: Sendable { var issueID: PocketParameterValue = 42 }

struct RedmineError: Error, Sendable, Equatable {
    var messages: [String]
}

struct RedmineErrorParser: PocketErrorParser {
    var schema: PocketSchema? { try? PocketSchema(json: #"{"errors": [""]}"#) }
    func error(from response: PocketResponse, json: PocketJSONValue?) -> (any Error & Sendable)? {
        guard let messages = json?["errors"].array else { return nil }
        return RedmineError(messages: messages.compactMap(\.string))
    }
}

/// Request bodies and path parameters through schemas, and error parsers,
/// against the in-process server.
final class SchemaRequestTests: XCTestCase {
    var server: TestServer!
    var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        // Echoes a request's body as a JSON response.
        server.route("/echo") { request in jsonReply(String(decoding: request.body, as: UTF8.self)) }
        client = try makeClient { $0.schemas = quickStartSchemas() }
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        // XCTest keeps test case objects for the whole run: drop what they hold.
        client = nil
        server = nil
    }

    // MARK: Request bodies

    /// A model goes out through the `{issue}` mapper's reverse and the
    /// reverse date transformer, and comes back through the forward ones.
    func testRequestBodyRoundTripThroughMapper() async throws {
        let issue = Issue(identifier: 7, projectName: "Pocket", authorName: nil, statusText: "New",
                          subject: "Schemas", descriptionText: "Line 1\nLine \"2\"", created: Redmine.created,
                          updated: Date(timeIntervalSince1970: 1427021604.5), doneRatio: 30)
        let post = PocketRequest(method: .post, url: url(server, "/echo"))
        let echoed = try await client.send(post, body: issue, bodySchema: PocketSchema(tag: "{issue}"), schema: PocketSchema(tag: "{issue}"))
        XCTAssertEqual(echoed.mapped(as: Issue.self), issue)

        let sent = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(sent.header("Content-Type"), "application/json")
        let json = try PocketJSONValue(parsing: Data(sent.body))
        XCTAssertEqual(json["created_on"], "2015-03-22T10:53:24Z")
        XCTAssertEqual(json["updated_on"], "2015-03-22T10:53:24.500Z")
        XCTAssertNil(json.object?["author"], "a nil optional is left out, not sent as null")
        XCTAssertEqual(json["subject"], "Schemas")
    }

    struct NewIssue: Codable, Sendable, Equatable {
        struct Fields: Codable, Sendable, Equatable {
            var project_id: Int
            var subject: String
            var due: Date?
            var watcher_ids: [Int]?
        }
        var issue: Fields
    }

    /// An `Encodable` model through a request schema found by the endpoint's
    /// name (in a subdirectory of the resources), and back.
    func testEncodableRequestBodyRoundTrip() async throws {
        let model = NewIssue(issue: .init(project_id: 3, subject: "Add schemas", due: Date(timeIntervalSince1970: 1735689599),
                                          watcher_ids: [1, 2]))
        let schema = PocketSchema.request(for: RequestToCreateIssue.self)
        let post = PocketRequest(method: .post, url: url(server, "/echo"))
        let echoed = try await client.send(post, body: model, bodySchema: schema, schema: schema)
        XCTAssertEqual(try echoed.decode(NewIssue.self), model)
        let sent = try PocketJSONValue(parsing: Data(try XCTUnwrap(server.receivedRequests.last).body))
        XCTAssertEqual(sent, ["issue": ["project_id": 3, "subject": "Add schemas", "due": "2024-12-31T23:59:59Z", "watcher_ids": [1, 2]]])
    }

    /// A body that breaks its schema fails before anything is sent.
    func testInvalidRequestBodyIsNotSent() async throws {
        let post = PocketRequest(method: .post, url: url(server, "/echo"))
        let schema = PocketSchema.request(for: RequestToCreateIssue.self)
        let missing = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(post, body: ["issue": ["project_id": 1]] as PocketJSONValue, bodySchema: schema, schema: schema)
        }
        XCTAssertEqual((missing?.underlying as? PocketSchemaViolation)?.reason,
                       "Can't find value for key 'subject' in 'root.issue' dictionary")
        let wrongType = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(post, body: ["issue": ["project_id": 1, "subject": "x", "due": .mapped(URL(string: "http://x")!)]] as PocketJSONValue,
                                       bodySchema: schema, schema: schema)
        }
        XCTAssertEqual((wrongType?.underlying as? PocketSchemaViolation)?.reason,
                       "Type mismatch for key 'due' in 'root.issue' dictionary: expected Date for {date_iso8601}, got URL")
        let unknown = await assertPocketError(.schemaUnknownTag) {
            try await self.client.send(post, body: 5, bodySchema: PocketSchema(tag: "{even}"), schema: PocketSchema(json: "{}"))
        }
        XCTAssertEqual(unknown?.message.split(separator: "\n").first,
                       "No value transformer or object mapper is registered for tag '{even}', used for 'root'")
        XCTAssertEqual(server.requestCount, 0)
    }

    func testOneWayMapperCannotWriteBodies() throws {
        var schemas = PocketSchemaRegistry()
        schemas.register(SchemaValidationTests.EvenOnly(), for: "{even}")
        XCTAssertThrowsError(try schemas.encodeBody(4, schema: PocketSchema(tag: "{even}"))) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaMappingFailed)
            XCTAssertTrue("\(error)".contains("EvenOnly maps JSON to Int only"), "\(error)")
        }
    }

    // MARK: Path parameters

    /// Parameters held to `RequestToGetIssue.path.json` (found from the
    /// endpoint's name), the date written by the reverse transformer, then
    /// `PocketRequest(path:)` fills `{issue_id}` and makes the rest the query.
    func testPathParametersThroughTheirSchema() async throws {
        server.route("/issues/42.json") { _ in jsonReply(Redmine.issue(42)) }
        let schemas = client.configuration.schemas
        let schema = PocketSchema.pathParameters(for: RequestToGetIssue.self)
        let parameters = try schemas.pathParameters(["issue_id": 42, "include": ["journals", "child ren"],
                                                     "since": .mapped(Redmine.created), "skip": nil], schema: schema)
        XCTAssertEqual(parameters, ["issue_id": 42, "include": ["journals", "child ren"], "since": "2015-03-22T10:53:24Z", "skip": nil])
        let request = try PocketRequest(path: "issues/{issue_id}.json", baseURL: url(server, "/"), parameters: parameters)
        let issue = try await client.send(request, schema: PocketSchema(tag: "{issue}"), as: Issue.self)
        XCTAssertEqual(issue.identifier, 42)
        let query = try XCTUnwrap(server.receivedRequests.last?.query)
        XCTAssertTrue(query.contains("since=2015-03-22T10%3A53%3A24Z"), query)
        XCTAssertTrue(query.contains("journals") && query.contains("child%20ren"), query)
        XCTAssertFalse(query.contains("skip"), query)

        // The schema holds parameters to their types and required keys.
        XCTAssertThrowsError(try schemas.pathParameters(["include": ["x"]], schema: schema)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaValidationFailed)
            XCTAssertEqual(((error as? PocketError)?.underlying as? PocketSchemaViolation)?.reason,
                           "Can't find value for key 'issue_id' in 'root' dictionary")
        }
        XCTAssertThrowsError(try schemas.pathParameters(["issue_id": "forty-two"], schema: schema)) { error in
            XCTAssertEqual(((error as? PocketError)?.underlying as? PocketSchemaViolation)?.reason,
                           #"Type mismatch for key 'issue_id' in 'root' dictionary: expected number, got string "forty-two""#)
        }
        XCTAssertThrowsError(try schemas.pathParameters(["issue_id": 1, "since": "last week"], schema: schema)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaTransformFailed)
        }
        XCTAssertThrowsError(try schemas.pathParameters(["issue_id": 1, "extra": .mapped(Redmine.created)], schema: schema)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaMappingFailed)
            XCTAssertEqual((error as? PocketError)?.message, "parameter 'extra' is a Date, which its schema has no tag to write as text")
        }
    }

    // MARK: Error parsers

    /// The client's error parser turns Redmine's 422 body into a typed error.
    func testClientErrorParserTypesErrorBodies() async throws {
        server.route("/issues.json") { _ in jsonReply(#"{"errors": ["Subject cannot be blank", "Tracker is invalid"]}"#, status: 422) }
        try await client.shutdown()
        client = try makeClient {
            $0.schemas = quickStartSchemas()
            $0.schemas.errorParser = RedmineErrorParser()
        }
        let error = await assertPocketError(.errorResponse) {
            try await self.client.send(PocketRequest(url: url(self.server, "/issues.json")), schema: .response(for: RequestToGetIssues.self))
        }
        XCTAssertEqual(error?.underlying as? RedmineError, RedmineError(messages: ["Subject cannot be blank", "Tracker is invalid"]))
        XCTAssertEqual(error?.response?.status, 422)
        XCTAssertTrue(error?.message.hasPrefix("HTTP 422") ?? false, error?.message ?? "")
    }

    /// A 200 whose body says `"success": false` is an error when the
    /// endpoint's parser says so; `"success": true` passes to the schema.
    func testEndpointErrorParserDeclaresA200AnError() async throws {
        struct APIError: Error, Sendable, Equatable { var message: String }
        let parser = PocketClosureErrorParser(schema: try PocketSchema(json: #"{"success": true, "message{?}": ""}"#)) { _, json in
            json?["success"].bool == false ? APIError(message: json?["message"].string ?? "") : nil
        }
        server.route("/quota") { _ in jsonReply(#"{"success": false, "message": "quota exceeded"}"#) }
        server.route("/ok") { _ in jsonReply(#"{"success": true, "count": 3}"#) }
        let schema = try PocketSchema(json: #"{"success": true, "count": 0}"#)
        let error = await assertPocketError(.errorResponse) {
            try await self.client.send(PocketRequest(url: url(self.server, "/quota")), schema: schema, errorParser: parser)
        }
        XCTAssertEqual(error?.underlying as? APIError, APIError(message: "quota exceeded"))
        XCTAssertEqual(error?.response?.status, 200)
        let ok = try await client.send(PocketRequest(url: url(server, "/ok")), schema: schema, errorParser: parser)
        XCTAssertEqual(ok["count"], 3)
        // Without the parser the same 200 is a schema failure, not an error response.
        let plain = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(PocketRequest(url: url(self.server, "/quota")), schema: schema)
        }
        XCTAssertEqual((plain?.underlying as? PocketSchemaViolation)?.reason, "Can't find value for key 'count' in 'root' dictionary")
    }

    /// The endpoint's parser wins over the client's; a non-2xx no parser
    /// typed fails as `.unacceptableStatus` unless the request's validation
    /// accepts it.
    func testErrorParserPrecedenceAndFallback() async throws {
        server.route("/teapot") { _ in jsonReply(#"{"errors": ["short and stout"]}"#, status: 418) }
        server.route("/html") { _ in .response(status: 404, headers: [("Content-Type", "text/html")], body: Array("<h1>Not Found</h1>".utf8)) }
        try await client.shutdown()
        client = try makeClient { $0.schemas.errorParser = RedmineErrorParser() }
        let endpointParser = PocketClosureErrorParser { response, _ in RedmineError(messages: ["endpoint saw \(response.status)"]) }
        let error = await assertPocketError(.errorResponse) {
            try await self.client.send(PocketRequest(url: url(self.server, "/teapot")), schema: PocketSchema(json: "{}"), errorParser: endpointParser)
        }
        XCTAssertEqual(error?.underlying as? RedmineError, RedmineError(messages: ["endpoint saw 418"]))
        // No typed error: a bad status is `.unacceptableStatus`, as `validate()` says it.
        let html = await assertPocketError(.unacceptableStatus) {
            try await self.client.send(PocketRequest(url: url(self.server, "/html")), schema: PocketSchema(json: "{}"))
        }
        XCTAssertNil(html?.underlying)
        XCTAssertEqual(html?.message, "HTTP 404 Not Found is not acceptable (expected 200-299): <h1>Not Found</h1>")
        XCTAssertEqual(html?.response?.status, 404)
        XCTAssertEqual(html?.body, Data("<h1>Not Found</h1>".utf8))
        // A status the request's validation accepts reaches the schema.
        var accepting = PocketRequest(url: url(server, "/teapot"))
        accepting.validation = .status([200..<300, 418..<419])
        let teapot = try await client.send(accepting, schema: PocketSchema(json: #"{"errors": [""]}"#),
                                           errorParser: PocketClosureErrorParser { _, _ in nil })
        XCTAssertEqual(teapot["errors"][0], "short and stout")
    }
}
