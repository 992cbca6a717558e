import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Named templates, scoped clients and the seeds' examples re-enacted.
final class APITemplateTests: XCTestCase {
    func testTemplateMergeRequestValuesWin() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { req in .text(req.target) }
        let client = try makeClient {
            $0.baseURL = URL(string: "http://192.0.2.1:9/unused")!
            $0.defaultQuery = ["client": "c", "shared": "from-client"]
        }

        var api = PocketRequestTemplate(baseURL: URL(string: server.baseURL + "/api/v1")!, format: .xml,
                                  timeouts: PocketTimeouts(connect: .seconds(2), read: .seconds(3), total: nil),
                                  headers: ["X-Team": "t", "Accept": "application/vnd.t+xml"],
                                  query: ["sessionId": "s1", "shared": "from-template", "drop": "x"])
        api.validation = PocketValidation(statusCodes: [200..<201])
        client.register(api, as: "api")
        XCTAssertEqual(client.template(named: "api"), api)

        var request = try client.request(.get, "needles/:id", template: "api", identifiers: [7],
                                         parameters: ["page": 2, "drop": nil], headers: ["X-Team": "mine"])
        XCTAssertEqual(request.timeouts, api.timeouts)
        XCTAssertEqual(request.validation, api.validation)
        XCTAssertEqual(request.format, .xml)
        // The template's validation runs in send: the server answers text/plain, the xml format wants xml.
        let refused = await assertPocketError(.unacceptableContentType) { try await client.send(request) }
        XCTAssertEqual(refused?.body.map { String(decoding: $0, as: UTF8.self) },
                       "/api/v1/needles/7?client=c&page=2&sessionId=s1&shared=from-template")
        request.validation?.contentTypes = ["text/plain"]
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "/api/v1/needles/7?client=c&page=2&sessionId=s1&shared=from-template")
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.headerValues("X-Team"), ["mine"])
        XCTAssertEqual(got.header("Accept"), "application/vnd.t+xml", "the template's explicit Accept beats its format's")
        XCTAssertEqual(got.header("User-Agent"), "Pocket/0.2.0", "client default headers still apply")

        // The template is copied: changing the request leaves it as it was.
        var changed = request
        changed.headers["X-Team"] = "other"
        XCTAssertEqual(client.template(named: "api")?.headers["X-Team"], "t")

        // The request's format wins over the template's.
        let json = try client.request(.post, "items", template: "api", body: .text("{}"), format: .json)
        XCTAssertEqual(json.headers["Content-Type"], "application/json")
        XCTAssertEqual(json.format, .json)

        // Without a template: the client's configuration.
        let plain = try client.request(.get, "x")
        XCTAssertEqual(plain.url.absoluteString, "http://192.0.2.1:9/unused/x?client=c&shared=from-client")
        // The client's format and query encoding, and a template's own encoding.
        let textClient = try makeClient {
            $0.baseURL = URL(string: server.baseURL)!
            $0.format = .text
            $0.queryEncoding = PocketQueryEncoding(arrayStyle: .repeated)
        }
        _ = try await textClient.send(try textClient.request(.get, "list", parameters: ["id": [1, 2]]))
        XCTAssertEqual(server.receivedRequests.last?.target, "/list?id=1&id=2")
        XCTAssertEqual(server.receivedRequests.last?.header("Accept"), "text/plain")
        textClient.register(PocketRequestTemplate(queryEncoding: PocketQueryEncoding(arrayStyle: .commaSeparated)), as: "csv")
        _ = try await textClient.send(try textClient.request(.get, "list", template: "csv", parameters: ["id": [1, 2]]))
        XCTAssertEqual(server.receivedRequests.last?.target, "/list?id=1,2")
        try await textClient.shutdown()

        client.removeTemplate(named: "api")
        await assertPocketError(.unknownTemplate) { try client.request(.get, "x", template: "api") }
        try await client.shutdown()
    }

    func testScopedClientsSharePoolAndAddScope() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { req in .text(req.target) }
        let client = try makeClient { $0.baseURL = URL(string: server.baseURL + "/api")! }
        let repos = try client.scoped(path: "repos/:owner", headers: ["Authorization": "Bearer abc"],
                                      query: ["per_page": 50], timeouts: PocketTimeouts(read: .seconds(9)))
        XCTAssertEqual(repos.configuration.baseURL?.absoluteString, server.baseURL + "/api/repos")
        let nested = try repos.scoped(path: "apple", headers: ["X-Nested": "1"])

        let r1 = try await nested.send(try nested.request(.get, "swift/issues", parameters: ["state": "open"]))
        XCTAssertEqual(r1.text, "/api/repos/apple/swift/issues?per_page=50&state=open")
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.header("Authorization"), "Bearer abc", "scope headers go with every request")
        XCTAssertEqual(got.header("X-Nested"), "1")
        XCTAssertEqual(nested.configuration.timeouts.read, .seconds(9))

        // Same pool: the parent reuses the connection the scoped client opened.
        let r2 = try await client.send(try client.request(.get, "ping"))
        XCTAssertEqual(r2.text, "/api/ping")
        XCTAssertTrue(r2.timings.reusedConnection)
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertNil(server.receivedRequests.last?.header("Authorization"), "the parent has no scope headers")

        // Default headers and User-Agent are per client; a scope can replace them.
        let agent = try client.scoped(headers: ["User-Agent": "Needles/2.0"])
        _ = try await agent.send(try agent.request(.get, "ua"))
        XCTAssertEqual(server.receivedRequests.last?.headerValues("User-Agent"), ["Needles/2.0"])
        _ = try await client.send(try client.request(.get, "ua"))
        XCTAssertEqual(server.receivedRequests.last?.headerValues("User-Agent"), ["Pocket/0.2.0"])

        // Templates are shared.
        nested.register(PocketRequestTemplate(query: ["t": 1]), as: "t")
        XCTAssertNotNil(client.template(named: "t"))

        // Shutting one down stops the shared engine.
        try await repos.shutdown()
        await assertPocketError(.shutdown) { try await client.send(try client.request(.get, "after")) }
    }

    /// MTPocket's README: a template with format, timeout, basic auth and a
    /// session parameter; requests with identifiers; the response object.
    func testMTPocketExampleReenacted() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/needles/17") { req in
            guard req.header("Authorization") == "Basic " + Data("UN:PW".utf8).base64EncodedString(),
                  req.query == "sessionId=fewoijalkfsdjlfsdhlaes" else { return .response(status: 401) }
            return .response(headers: [("Content-Type", "application/json; charset=utf-8"), ("X-Stream-Length", "38")],
                             body: Array(#"{"id":17,"name":"Pin","sizes":[1,2]}  "#.utf8))
        }
        server.route("/companies/3/employee/2,4") { _ in
            .response(headers: [("Content-Type", "application/json")], body: Array(#"[{"id":2},{"id":4}]"#.utf8))
        }
        let client = try makeClient { $0.baseURL = URL(string: server.baseURL + "/")! }
        var template = PocketRequestTemplate()
        template.format = .json
        template.timeouts = PocketTimeouts(connect: .seconds(2), read: .seconds(2), total: nil)
        template.headers = try .basicAuthorization(username: "UN", password: "PW")
        template.query["sessionId"] = "fewoijalkfsdjlfsdhlaes"
        client.register(template, as: "api")

        struct Needle: Decodable, Equatable { var id: Int; var name: String; var sizes: [Int] }
        let request = try client.request(.get, "needles/:id", template: "api", identifiers: [17])
        let response = try await client.send(request)
        XCTAssertTrue(response.isSuccess)
        XCTAssertEqual(response.httpStatus, .ok)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.mimeType, "application/json")
        XCTAssertEqual(response.expectedContentLength, 38)
        XCTAssertEqual(response.expectedContentLength(header: "X-Stream-Length"), 38)
        XCTAssertEqual(try response.validate().decode(Needle.self), Needle(id: 17, name: "Pin", sizes: [1, 2]))
        XCTAssertEqual(response.data, response.body)
        XCTAssertTrue(response.text.hasPrefix(#"{"id":17"#))
        XCTAssertEqual(response.request, request)
        XCTAssertNil(response.requestText, "a GET has no body")
        XCTAssertGreaterThan(response.timings.total, .zero)

        struct Employee: Decodable, Equatable { var id: Int }
        let employees = try client.request(.get, "companies/:company_id/employee/:id", template: "api",
                                           identifiers: [3, [2, 4]])
        XCTAssertEqual(employees.url.path(), "/companies/3/employee/2,4")
        let list = try await client.send(employees).validate().decode([Employee].self)
        XCTAssertEqual(list, [Employee(id: 2), Employee(id: 4)])

        // Wrong credentials: a 401 is a response; validate() turns it into an error.
        var bad = request
        bad.headers.authorize(try .basic(username: "UN", password: "nope"))
        let denied = try await client.send(bad)
        XCTAssertEqual(denied.httpStatus, .unauthorized)
        XCTAssertEqual(denied.httpStatus.kind, .clientError)
        XCTAssertFalse(denied.isSuccess)
        await assertPocketError(.unacceptableStatus) { try denied.validate() }
        try await client.shutdown()
    }

    /// TyphoonRestClient's Redmine quick start: GET issues.json with
    /// pathParameters that become the query (nil skipped), and
    /// issues/{issue_id}.json with a path parameter.
    func testTyphoonRedmineIssuesReenacted() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let issuesJSON = #"""
        {"issues":[{"id":19448,"project":{"id":1,"name":"Redmine"},"subject":"Mapa do SIte","category":{"id":24,"name":"Documentation"},"done_ratio":0,"created_on":"2015-03-22T10:53:24Z"},
                   {"id":19449,"project":{"id":1,"name":"Redmine"},"subject":"Second","done_ratio":10,"created_on":"2015-03-23T10:53:24Z"}],
         "total_count":4479,"offset":0,"limit":2}
        """#
        server.route("/issues.json") { _ in
            .response(headers: [("Content-Type", "application/json; charset=utf-8")], body: Array(issuesJSON.utf8))
        }
        server.route("/issues/19448.json") { _ in
            .response(headers: [("Content-Type", "application/json")],
                      body: Array(#"{"issue":{"id":19448,"subject":"Mapa do SIte"}}"#.utf8))
        }
        let client = try makeClient { $0.baseURL = URL(string: server.baseURL)! }

        struct Issue: Decodable { var id: Int; var subject: String; var done_ratio: Int; var category: Category? }
        struct Category: Decodable { var id: Int; var name: String }
        struct Issues: Decodable { var issues: [Issue]; var total_count: Int; var limit: Int }

        // TyphoonRestClient's RequestToGetIssues, as a function of its inputs.
        func requestToGetIssues(projectId: Int?, range: (location: Int, length: Int)) throws -> PocketRequest {
            try client.request(.get, "issues.json", parameters: [
                "project_id": PocketParameterValue(projectId),
                "offset": .integer(range.location),
                "limit": range.length > 0 ? .integer(range.length) : 10,
            ])
        }
        let response = try await client.send(try requestToGetIssues(projectId: nil, range: (0, 2)))
        XCTAssertEqual(server.receivedRequests.last?.target, "/issues.json?limit=2&offset=0")
        let page = try response.validate().decode(Issues.self)
        XCTAssertEqual(page.issues.map(\.id), [19448, 19449])
        XCTAssertEqual(page.issues[0].category?.name, "Documentation")
        XCTAssertNil(page.issues[1].category)
        XCTAssertEqual(page.total_count, 4479)

        // The schema's required "category": decoding names the JSON path, as TRC's validation does.
        struct StrictIssue: Decodable { var id: Int; var category: Category }
        struct StrictIssues: Decodable { var issues: [StrictIssue] }
        let error = await assertPocketError(.decodingFailed) { try response.decode(StrictIssues.self) }
        XCTAssertTrue(error?.message.contains("root.issues[1].category") ?? false, error?.message ?? "")

        struct One: Decodable { var issue: Issue2 }
        struct Issue2: Decodable { var id: Int; var subject: String }
        let single = try client.request(.get, "issues/{issue_id}.json", parameters: ["issue_id": 19448])
        let one = try await client.send(single).validate().decode(One.self)
        XCTAssertEqual(one.issue.subject, "Mapa do SIte")
        XCTAssertEqual(server.receivedRequests.last?.target, "/issues/19448.json")
        try await client.shutdown()
    }
}
