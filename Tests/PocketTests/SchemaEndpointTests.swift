import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

struct IssuesPage: Decodable, Sendable {
    let issues: [Issue]
    let total_count: Int
}

/// TyphoonRestClient's `RequestToGetIssues` as an endpoint type: its
/// response schema is `RequestToGetIssues.response.json`, by its name.
extension RequestToGetIssues: PocketEndpoint {
    typealias Output = IssuesPage
    var path: String { "issues.json" }
}

/// Its pasted-response variant, where every key is required.
struct RequestToGetIssuesRaw: PocketEndpoint {
    typealias Output = IssuesPage
    var path: String { "issues.json" }
}

/// One issue: path parameters held to `RequestToGetIssue.path.json`; the
/// response schema given explicitly (no file for it).
extension RequestToGetIssue: PocketEndpoint {
    typealias Output = Issue
    var path: String { "issues/{issue_id}.json" }
    var pathParameters: [String: PocketParameterValue] { ["issue_id": issueID] }
    var responseSchema: PocketSchema? { PocketSchema(tag: "{issue}") }
}

/// A POST whose packed parameters are held to `RequestToCreateIssue.request.json`.
extension RequestToCreateIssue: PocketEndpoint {
    typealias Output = PocketResponse
    struct Fields: Encodable, Sendable {
        var projectId: Int
        var subject: String?
    }
    struct Parameters: Encodable, Sendable {
        var issue: Fields
    }
    var method: PocketMethod { .post }
    var path: String { "echo" }
    var parameters: Parameters { Parameters(issue: Fields(projectId: 3, subject: subject)) }
}

/// An endpoint with no schema file: decoded as before, by JSONDecoder.
struct RequestWithoutSchema: PocketEndpoint {
    struct Output: Decodable, Sendable { let total_count: Int }
    var path: String { "issues.json" }
}

struct QuotaError: Error, Sendable, Equatable { var message: String }

/// An endpoint whose API answers `200 {"success": false}` for errors.
struct RequestToCheckQuota: PocketEndpoint {
    struct Output: Decodable, Sendable { let success: Bool; let remaining: Int }
    var path: String { "quota" }
    var errorParser: (any PocketErrorParser)? {
        PocketClosureErrorParser(schema: try? PocketSchema(json: #"{"success": true, "message{?}": ""}"#)) { _, json in
            json?["success"].bool == false ? QuotaError(message: json?["message"].string ?? "") : nil
        }
    }
}

/// Endpoint types find their schemas by name (`TypeName.response.json`,
/// `.path.json`, `.request.json`) in the client's schema resources.
final class SchemaEndpointTests: XCTestCase {
    var server: TestServer!
    var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        server.route("/api/issues.json") { _ in jsonReply(Redmine.body) }
        server.route("/api/issues/42.json") { _ in jsonReply(Redmine.issue(42)) }
        server.route("/api/echo") { request in jsonReply(String(decoding: request.body, as: UTF8.self)) }
        let base = URL(string: server.url("/api/"))
        client = try makeClient {
            $0.baseURL = base
            $0.schemas = quickStartSchemas()
        }
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        client = nil
        server = nil
    }

    func testResponseSchemaByConvention() async throws {
        let page = try await client.send(RequestToGetIssues())
        XCTAssertEqual(page.issues.map(\.identifier), [19448, 19447, 19446])
        XCTAssertNil(page.issues[2].authorName)
        XCTAssertEqual(page.issues[0].created, Redmine.created)
        XCTAssertEqual(page.total_count, 4479)
    }

    func testFailingResponseSchemaByConvention() async throws {
        let error = await assertPocketError(.schemaValidationFailed) { try await self.client.send(RequestToGetIssuesRaw()) }
        XCTAssertEqual((error?.underlying as? PocketSchemaViolation)?.reason,
                       "Can't find value for key 'category' in 'root.issues[1]' dictionary")
    }

    func testEndpointWithoutSchemaFileDecodesAsBefore() async throws {
        let output = try await client.send(RequestWithoutSchema())
        XCTAssertEqual(output.total_count, 4479)
    }

    func testPathParametersSchemaByConvention() async throws {
        let issue = try await client.send(RequestToGetIssue())
        XCTAssertEqual(issue.identifier, 42)
        XCTAssertEqual(issue.created, Redmine.created)
        let sent = server.requestCount
        let error = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(RequestToGetIssue(issueID: "forty-two"))
        }
        XCTAssertEqual((error?.underlying as? PocketSchemaViolation)?.reason,
                       #"Type mismatch for key 'issue_id' in 'root' dictionary: expected number, got string "forty-two""#)
        XCTAssertEqual(server.requestCount, sent, "nothing is sent")
    }

    func testRequestSchemaByConvention() async throws {
        let response = try await client.send(RequestToCreateIssue())
        XCTAssertEqual(try PocketJSONValue(parsing: response.body), ["issue": ["project_id": 3, "subject": "Add schemas"]])
        let sent = server.requestCount
        let error = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(RequestToCreateIssue(subject: nil))
        }
        XCTAssertEqual((error?.underlying as? PocketSchemaViolation)?.reason,
                       "Can't find value for key 'subject' in 'root.issue' dictionary")
        XCTAssertEqual(server.requestCount, sent, "nothing is sent")
    }

    /// The endpoint's error parser declares a 200 an error; with no schema
    /// file it runs alone, and a good answer decodes as before.
    func testEndpointErrorParser() async throws {
        let answer = Lock(#"{"success": false, "message": "quota exceeded"}"#)
        server.route("/api/quota") { _ in jsonReply(answer.withLock { $0 }) }
        let error = await assertPocketError(.errorResponse) { try await self.client.send(RequestToCheckQuota()) }
        XCTAssertEqual(error?.underlying as? QuotaError, QuotaError(message: "quota exceeded"))
        answer.withLock { $0 = #"{"success": true, "remaining": 7}"# }
        let output = try await client.send(RequestToCheckQuota())
        XCTAssertEqual(output.remaining, 7)
    }

    /// A queue sends endpoints the same way.
    func testQueuedEndpointUsesItsSchema() async throws {
        let queue = PocketRequestQueue(client: client)
        let page = try await queue.send(RequestToGetIssues())
        XCTAssertEqual(page.issues.count, 3)
        await assertPocketError(.schemaValidationFailed) { try await queue.send(RequestToGetIssuesRaw()) }
    }
}
