import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The endpoint type whose name finds `RequestToGetIssues.response.json`.
struct RequestToGetIssues: Sendable {}

/// TyphoonRestClient's quick-start model.
struct Issue: Codable, Sendable, Equatable {
    var identifier: Int
    var projectName: String
    var authorName: String?
    var statusText: String
    var subject: String
    var descriptionText: String
    var created: Date
    var updated: Date
    var doneRatio: Int
}

/// TyphoonRestClient's quick-start mapper; its schema is
/// `IssueMapper.response.json`, found by the mapper's name.
struct IssueMapper: PocketObjectMapper {
    func model(from json: PocketJSONValue) throws -> Issue? {
        Issue(identifier: json["id"].int!,
              projectName: json["project"]["name"].string!,
              authorName: json["author"]["name"].string,
              statusText: json["status"]["name"].string!,
              subject: json["subject"].string!,
              descriptionText: json["description"].string!,
              created: json["created_on"].mapped(as: Date.self)!,
              updated: json["updated_on"].mapped(as: Date.self)!,
              doneRatio: json["done_ratio"].int!)
    }

    func json(from issue: Issue) throws -> PocketJSONValue {
        var author: PocketJSONValue = .null
        if let name = issue.authorName { author = ["id": 1, "name": .string(name)] }
        return [
            "id": .int(issue.identifier),
            "project": ["id": 1, "name": .string(issue.projectName)],
            "tracker": ["id": 2, "name": "Feature"],
            "status": ["id": 1, "name": .string(issue.statusText)],
            "priority": ["id": 4, "name": "Normal"],
            "author": author,
            "subject": .string(issue.subject),
            "description": .string(issue.descriptionText),
            "done_ratio": .int(issue.doneRatio),
            "created_on": .mapped(issue.created),
            "updated_on": .mapped(issue.updated),
        ]
    }
}

/// A Redmine `issues.json` answer: the first issue has every key, the second has no
/// `category` and no `custom_fields`, the third no `author`.
enum Redmine {
    static func issue(_ id: Int, author: Bool = true, category: Bool = true, customFields: Bool = true,
                      subject: String? = nil) -> String {
        var members: [String] = [
            #""id": \#(id)"#,
            #""project": {"id": 1, "name": "Redmine"}"#,
            #""tracker": {"id": 2, "name": "Feature"}"#,
            #""status": {"id": 1, "name": "New"}"#,
            #""priority": {"id": 4, "name": "Normal"}"#,
        ]
        if author { members.append(#""author": {"id": 124165, "name": "Reginaldo P. Fernandes Ribeiro Reginaldo"}"#) }
        if category { members.append(#""category": {"id": 24, "name": "Documentation"}"#) }
        members.append(#""subject": "\#(subject ?? "Issue \(id)")""#)
        members.append(#""description": "Cria\u00e7\u00e3o do mapa do site""#)
        members.append(#""done_ratio": \#(id % 100)"#)
        if customFields { members.append(#""custom_fields": [{"id": 2, "name": "Resolution", "value": ""}]"#) }
        members.append(#""created_on": "2015-03-22T10:53:24Z""#)
        members.append(#""updated_on": "2015-03-21T09:00:00Z""#)
        return "{" + members.joined(separator: ", ") + "}"
    }

    static func page(_ issues: [String]) -> String {
        #"{"issues": [\#(issues.joined(separator: ", "))], "total_count": 4479, "offset": 0, "limit": \#(issues.count)}"#
    }

    static let body = page([issue(19448), issue(19447, category: false, customFields: false), issue(19446, author: false)])

    static let created = Date(timeIntervalSince1970: 1427021604)
    static let updated = Date(timeIntervalSince1970: 1426928400)
}

func jsonReply(_ text: String, status: Int = 200) -> TestServer.Reply {
    .response(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
}

/// Schemas with the quick-start's registrations and the test bundle's schema files.
func quickStartSchemas() -> PocketSchemaRegistry {
    var schemas = PocketSchemaRegistry()
    schemas.resources = Bundle.module.resourceURL
    schemas.register(IssueMapper(), for: "{issue}")
    return schemas
}

final class SchemaQuickStartTests: XCTestCase {
    var server: TestServer!
    var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        server.route("/issues.json") { _ in jsonReply(Redmine.body) }
        client = try makeClient { $0.schemas = quickStartSchemas() }
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        // XCTest keeps test case objects for the whole run: drop what they hold.
        client = nil
        server = nil
    }

    var issuesRequest: PocketRequest { PocketRequest(url: url(server, "/issues.json")) }

    /// Step 1: the server's response pasted as the schema; every key is
    /// required, so the issue without a category fails with TRC's message.
    func testPastedResponseAsSchemaNamesTheMissingCategory() async throws {
        let error = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(self.issuesRequest, schema: .resource("RequestToGetIssuesRaw.response.json"))
        }
        let violation = try XCTUnwrap(error?.underlying as? PocketSchemaViolation)
        XCTAssertEqual(violation.reason, "Can't find value for key 'category' in 'root.issues[1]' dictionary")
        XCTAssertEqual(error?.message.split(separator: "\n").first.map(String.init),
                       "Can't find value for key 'category' in 'root.issues[1]' dictionary")
        XCTAssertEqual(violation.path.description, "root.issues[1].category")
        XCTAssertEqual(error?.response?.status, 200)
        // The excerpt marks the line where the dictionary without the key starts.
        let lines = violation.excerpt.split(separator: "\n").map(String.init)
        let marked = try XCTUnwrap(lines.firstIndex { $0.hasPrefix(">") })
        XCTAssertEqual(lines.filter { $0.hasPrefix(">") }.count, 1)
        XCTAssertTrue(lines[marked].hasSuffix("{"), violation.excerpt)
        XCTAssertTrue(lines[marked + 1].contains(#""id": 19447"#), violation.excerpt)
    }

    /// Step 2: `{?}` makes author, category and custom_fields optional, and
    /// `{date_iso8601}` turns the dates into `Date`s.
    func testOptionalKeysAndDateTransformer() async throws {
        let page = try await client.send(issuesRequest, schema: .resource("RequestToGetIssuesOptional.response.json"))
        let issues = try XCTUnwrap(page["issues"].array)
        XCTAssertEqual(issues.count, 3)
        XCTAssertEqual(issues[0]["created_on"].mapped(as: Date.self), Redmine.created)
        XCTAssertEqual(issues[1]["updated_on"].mapped(as: Date.self), Redmine.updated)
        XCTAssertEqual(issues[1]["category"], .null)
        XCTAssertNil(issues[1].object?["category"])
        XCTAssertEqual(issues[2]["author"], .null)
        XCTAssertEqual(issues[0]["subject"].string, "Issue 19448")
        XCTAssertEqual(page["total_count"].int, 4479)
    }

    /// Step 3: `RequestToGetIssues.response.json` (found from the type's
    /// name) says `["{issue}"]`; the `{issue}` mapper validates each issue
    /// against `IssueMapper.response.json` and makes an `Issue`.
    func testIssueMapperByConvention() async throws {
        let page = try await client.send(issuesRequest, schema: .response(for: RequestToGetIssues.self))
        let issues = try XCTUnwrap(page["issues"].mappedArray(of: Issue.self))
        XCTAssertEqual(issues.map(\.identifier), [19448, 19447, 19446])
        XCTAssertEqual(issues[0].authorName, "Reginaldo P. Fernandes Ribeiro Reginaldo")
        XCTAssertNil(issues[2].authorName)
        XCTAssertEqual(issues[1].projectName, "Redmine")
        XCTAssertEqual(issues[1].statusText, "New")
        XCTAssertEqual(issues[0].descriptionText, "Criação do mapa do site")
        XCTAssertEqual(issues[0].created, Redmine.created)
        XCTAssertEqual(issues[0].updated, Redmine.updated)
        XCTAssertEqual(issues[2].doneRatio, 46)
    }

    /// The failing variant through the mapper: the message names the place
    /// in the whole body, not in the mapper's own schema.
    func testIssueMapperFailureNamesThePlaceInTheBody() async throws {
        server.route("/issues.json") { _ in
            jsonReply(Redmine.page([Redmine.issue(1), Redmine.issue(2).replacingOccurrences(of: #""subject""#, with: #""title""#)]))
        }
        let error = await assertPocketError(.schemaValidationFailed) {
            try await self.client.send(self.issuesRequest, schema: .response(for: RequestToGetIssues.self))
        }
        XCTAssertEqual((error?.underlying as? PocketSchemaViolation)?.reason,
                       "Can't find value for key 'subject' in 'root.issues[1]' dictionary")
    }

    /// A `Decodable` type serves as the mapper, and mappers nest:
    /// `IssueRecord.response.json` maps `project` with `{project}`.
    func testDecodableMappersNest() async throws {
        struct ProjectRef: Decodable, Sendable, Equatable { let id: Int; let name: String }
        struct IssueRecord: Decodable, Sendable {
            let id: Int
            let project: ProjectRef
            let subject: String
            let done_ratio: Int
            let created_on: Date
            let author: Author?
            struct Author: Decodable, Sendable { let name: String }
        }
        var schemas = quickStartSchemas()
        schemas.register(IssueRecord.self, for: "{issue}")
        schemas.register(ProjectRef.self, for: "{project}")
        let response = try await client.send(issuesRequest)
        let page = try response.validated(schema: .response(for: RequestToGetIssues.self), registry: schemas)
        let issues = try XCTUnwrap(page["issues"].mappedArray(of: IssueRecord.self))
        XCTAssertEqual(issues.map(\.id), [19448, 19447, 19446])
        XCTAssertEqual(issues[0].project, ProjectRef(id: 1, name: "Redmine"))
        XCTAssertEqual(issues[0].created_on, Redmine.created)
        XCTAssertEqual(issues[0].author?.name, "Reginaldo P. Fernandes Ribeiro Reginaldo")
        XCTAssertNil(issues[2].author)
    }

    struct PocketPage<Item: Decodable & Sendable>: Decodable, Sendable {
        let issues: [Item]
        let total_count: Int
    }

    /// The schema on the request: `send` validates and maps before it
    /// returns, and `response.decode` reads the mapped result.
    func testRequestSchemaHooksIntoSendAndDecode() async throws {
        var request = issuesRequest
        request.schema = .response(for: RequestToGetIssues.self)
        let response = try await client.send(request)
        let page = try response.decode(PocketPage<Issue>.self)
        XCTAssertEqual(page.issues.map(\.identifier), [19448, 19447, 19446])
        XCTAssertEqual(page.issues[0].created, Redmine.created)
        XCTAssertEqual(page.total_count, 4479)
        XCTAssertNotNil(response.schemaResult)

        // Validation runs before decoding, inside send, with TRC's message.
        request.schema = .resource("RequestToGetIssuesRaw.response.json")
        let error = await assertPocketError(.schemaValidationFailed) { try await self.client.send(request) }
        XCTAssertEqual((error?.underlying as? PocketSchemaViolation)?.reason,
                       "Can't find value for key 'category' in 'root.issues[1]' dictionary")
        XCTAssertEqual(error?.body, Data(Redmine.body.utf8))

        // A model the schema's result does not decode to is `.decodingFailed`, with the path.
        request.schema = .resource("RequestToGetIssuesOptional.response.json")
        struct Wrong: Decodable { let issues: [[String: Int]] }
        let decoding = try await client.send(request)
        XCTAssertThrowsError(try decoding.decode(Wrong.self)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .decodingFailed)
            XCTAssertTrue("\(error)".contains("root.issues[0].project"), "\(error)")
        }
    }

    /// An optional convention: where the file exists it applies, where it
    /// does not nothing is validated (not even the status).
    func testOptionalConventionSchema() async throws {
        struct NoSchemaFileForThis {}
        server.route("/missing") { _ in .text("not json", status: 404) }
        var plain = PocketRequest(url: url(server, "/missing"))
        plain.schema = .response(for: NoSchemaFileForThis.self, optional: true)
        let response = try await client.send(plain)
        XCTAssertEqual(response.status, 404)
        XCTAssertNil(response.schemaResult)
        XCTAssertTrue(client.configuration.schemas.isAbsent(plain.schema!))

        var request = issuesRequest
        request.schema = .response(for: RequestToGetIssues.self, optional: true)
        XCTAssertFalse(client.configuration.schemas.isAbsent(request.schema!))
        let page = try await client.send(request).decode(PocketPage<Issue>.self)
        XCTAssertEqual(page.issues.count, 3)
        // A required file that is missing is an error, not a silent pass.
        request.schema = .response(for: NoSchemaFileForThis.self)
        await assertPocketError(.schemaNotFound) { try await self.client.send(request) }
    }

    /// A `{root}` mapper: the whole body is one issue, mapped at the root.
    func testRootMapper() async throws {
        server.route("/issues/7.json") { _ in jsonReply(Redmine.issue(7)) }
        let request = PocketRequest(url: url(server, "/issues/7.json"))
        let issue = try await client.send(request, schema: PocketSchema(json: #"{"{root}": "{issue}"}"#), as: Issue.self)
        XCTAssertEqual(issue.identifier, 7)
        let same = try await client.send(request, schema: PocketSchema(tag: "issue"), as: Issue.self)
        XCTAssertEqual(same, issue)
    }
}
