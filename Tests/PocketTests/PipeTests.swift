import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// AGPipe's documented example re-enacted against a small REST resource on
/// the test server, then ids, errors, timeout and cancel.
final class PipeTests: XCTestCase {
    struct Project: Codable, Sendable, Equatable {
        var id: Int?
        var title: String
        var style: String?
    }

    private var server: TestServer!
    private var store: RESTStore!
    private var client: PocketClient!
    private var pipeline: PocketPipeline!

    override func setUp() async throws {
        server = try TestServer()
        store = RESTStore(prefix: "/api/projects")
        server.defaultHandler = { [store] r in store!.handle(r) }
        client = try makeClient()
        pipeline = PocketPipeline(baseURL: URL(string: server.url("/api/"))!, client: client)
    }

    override func tearDown() async throws {
        server.shutdown()
        try await client.shutdown()
        // XCTest keeps every test case instance to the end of the run: drop
        // the client so its engine threads are joined now.
        pipeline = nil
        client = nil
        server = nil
    }

    func testTheAGPipeExampleSaveUpdateReadReadWithParamsRemove() async throws {
        let bearer = try PocketAuthorization.bearer("token")
        let projects = pipeline.pipe(Project.self, name: "projects") { config in
            config.headers["X-Client"] = "todo"
            config.authorization = bearer
        }
        XCTAssertEqual(projects.url.absoluteString, server.url("/api/projects"), "one slash between base and endpoint")

        // Save: no id yet, so POST; the server's object carries the id.
        var project = Project(title: "Hello World", style: "project-234-255-0")
        project = try await projects.save(project)
        XCTAssertEqual(project.id, 1)
        let create = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(create.method, "POST")
        XCTAssertEqual(create.path, "/api/projects")
        XCTAssertEqual(create.header("Content-Type"), "application/json")
        XCTAssertEqual(create.header("Accept"), "application/json")
        XCTAssertEqual(create.header("Authorization"), "Bearer token")
        XCTAssertEqual(create.header("X-Client"), "todo")
        let sent = try JSONSerialization.jsonObject(with: Data(create.body)) as? [String: Any]
        XCTAssertEqual(sent?["title"] as? String, "Hello World")
        XCTAssertNil(sent?["id"], "a record without an id is sent without one")

        // Update: it has an id now, so PUT /projects/1.
        project.title = "Hello Update World!"
        let updated = try await projects.save(project)
        XCTAssertEqual(updated, project)
        XCTAssertEqual(server.receivedRequests.last?.method, "PUT")
        XCTAssertEqual(server.receivedRequests.last?.path, "/api/projects/1")

        _ = try await projects.save(Project(title: "Some title", style: "project-255-255-255"))

        // Read all, read one, read with params.
        let all = try await projects.read()
        XCTAssertEqual(all.map(\.title), ["Hello Update World!", "Some title"])
        let one = try await projects.read(id: 2)
        XCTAssertEqual(one.title, "Some title")
        XCTAssertEqual(server.receivedRequests.last?.target, "/api/projects/2")
        let matching = try await projects.read(params: ["title": "Some title", "style": "project-255-255-255"])
        XCTAssertEqual(matching.map(\.id), [2])
        XCTAssertEqual(server.receivedRequests.last?.target,
                       "/api/projects?style=project-255-255-255&title=Some%20title", "RFC 3986 escaping, names sorted")

        // Remove: DELETE /projects/1.
        try await projects.remove(project)
        XCTAssertEqual(server.receivedRequests.last?.method, "DELETE")
        XCTAssertEqual(server.receivedRequests.last?.path, "/api/projects/1")
        let left = try await projects.read()
        XCTAssertEqual(left.map(\.id), [2])
        XCTAssertTrue(pipeline.pipe(named: "projects", as: Project.self) === projects)
        XCTAssertNil(pipeline.pipe(named: "projects", as: String.self), "the name is kept with its model type")
    }

    func testRecordsWithoutIdsAndServerErrorsFailClearly() async throws {
        let projects = pipeline.pipe(Project.self, name: "projects")
        await assertPocketError(.missingRecordID) { try await projects.remove(Project(title: "no id")) }
        XCTAssertEqual(server.requestCount, 0, "nothing was sent")
        await assertPocketError(.missingRecordID) { try await projects.read(id: "") }

        let missing = await assertPocketError(.unacceptableStatus) { try await projects.read(id: 42) }
        XCTAssertEqual(missing?.response?.status, 404)

        server.route("/api/broken") { _ in .text(#"{"title": 5}"#, headers: [("Content-Type", "application/json")]) }
        let broken = pipeline.pipe(Project.self, name: "broken")
        await assertPocketError(.decodingFailed) { try await broken.read() }

        // A list read must be JSON; a DELETE's answer is not read, so any 2xx does.
        server.route("/api/plain") { _ in .text("not json") }
        server.route("/api/plain/1") { _ in .text("deleted") }
        let plain = pipeline.pipe(Project.self, name: "plain")
        let wrongType = await assertPocketError(.unacceptableContentType) { try await plain.read() }
        XCTAssertEqual(wrongType?.body, Data("not json".utf8), "the error keeps the body")
        try await plain.remove(id: 1)
    }

    func testIdKeyEndpointAndIdEncodingAreConfigurable() async throws {
        struct Item: Codable, Sendable, Equatable {
            var _id: String?
            var name: String
        }
        let items = pipeline.pipe(Item.self, name: "items") { config in
            config.endpoint = "/v2/things"
            config.recordIDKey = "_id"
        }
        let itemStore = RESTStore(prefix: "/api/v2/things", idKey: "_id", stringIDs: true)
        server.defaultHandler = { r in itemStore.handle(r) }
        let saved = try await items.save(Item(name: "first"))
        XCTAssertEqual(saved._id, "id-1")
        XCTAssertEqual(server.receivedRequests.last?.path, "/api/v2/things")
        _ = try await items.save(saved)
        XCTAssertEqual(server.receivedRequests.last?.method, "PUT")
        XCTAssertEqual(server.receivedRequests.last?.path, "/api/v2/things/id-1")
        await assertPocketError(.unacceptableStatus) { try await items.remove(id: "a/b c?") }
        XCTAssertEqual(server.receivedRequests.last?.target, "/api/v2/things/a%2Fb%20c%3F", "an id is one path segment")
    }

    func testARecordCanChooseItsOwnBody() async throws {
        struct Note: Codable, Sendable, PocketPipeBodyProviding {
            var id: Int?
            var text: String
            func pipeRequestBody() throws -> (body: PocketRequestBody, contentType: String) {
                (.text("note: \(text)"), "text/plain")
            }
        }
        server.route("/api/notes") { r in
            .text(#"{"id": 7, "text": "\#(r.bodyText)"}"#, status: 201, headers: [("Content-Type", "application/json")])
        }
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let notes = pipeline.pipe(Note.self, name: "notes") { $0.uploadProgress = progress }
        let saved = try await notes.save(Note(text: "hi"))
        XCTAssertEqual(saved.id, 7)
        XCTAssertEqual(saved.text, "note: hi")
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Type"), "text/plain")
        var last: PocketTransferProgress?
        for await p in updates where p.direction == .upload { last = p }
        XCTAssertEqual(last?.bytes, 8, "upload progress reached the whole body")
    }

    func testTimeoutFailsTheOperationAsATimeout() async throws {
        server.route("/api/slow") { _ in .stall(milliseconds: 30_000) }
        let slow = pipeline.pipe(Project.self, name: "slow") { $0.timeout = .seconds(1) }
        do {
            _ = try await slow.read()
            XCTFail("the server never answers")
        } catch let error as PocketError {
            XCTAssertTrue(error.isTimeout, "\(error)")
        }
    }

    func testCancelFailsEveryOperationInFlight() async throws {
        server.route("/api/slow") { _ in .stall(milliseconds: 30_000) }
        server.route("/api/slow/3") { _ in .stall(milliseconds: 30_000) }
        let slow = pipeline.pipe(Project.self, name: "slow")
        let first = Task { try await slow.read() }
        let second = Task { try await slow.read(id: 3) }
        await assertEventually("both requests reached the server", seconds: 10) { server.requestCount == 2 }
        XCTAssertEqual(slow.operationsInFlight, 2)
        slow.cancel()
        await assertPocketError(.cancelled) { try await first.value }
        await assertPocketError(.cancelled) { try await second.value }
        XCTAssertEqual(slow.operationsInFlight, 0)

        // The pipe goes on working afterwards.
        let projects = pipeline.pipe(Project.self, name: "projects")
        let saved = try await projects.save(Project(title: "after"))
        XCTAssertEqual(saved.id, 1)
    }
}

/// A JSON collection resource under `prefix`: GET (all, filtered by query
/// parameters, or one), POST (assigns an id), PUT, DELETE.
final class RESTStore: Sendable {
    /// (id, record as JSON) in creation order.
    private let records = Lock<[(String, Data)]>([])
    private let counter = Lock(0)
    let prefix: String
    let idKey: String
    let stringIDs: Bool

    init(prefix: String, idKey: String = "id", stringIDs: Bool = false) {
        self.prefix = prefix
        self.idKey = idKey
        self.stringIDs = stringIDs
    }

    func handle(_ r: TestServer.Request) -> TestServer.Reply {
        guard r.path.hasPrefix(prefix) else { return .text("not found", status: 404) }
        let rest = r.path.dropFirst(prefix.count)
        let id = rest.hasPrefix("/") ? String(rest.dropFirst()) : nil
        switch (r.method, id) {
        case ("GET", nil):
            let filters = queryParameters(r.query)
            let all = records.withLock { $0 }.compactMap { object($0.1) }.filter { record in
                filters.allSatisfy { k, v in "\(record[k] ?? "")" == v }
            }
            return json(all)
        case ("POST", nil):
            guard var record = object(Data(r.body)) else { return .text("bad", status: 400) }
            let n = counter.withLock { $0 += 1; return $0 }
            let key = stringIDs ? "id-\(n)" : "\(n)"
            record[idKey] = stringIDs ? key as Any : n as Any
            let stored = serialized(record)
            records.withLock { $0.append((key, stored)) }
            return json(record, status: 201)
        case ("GET", let id?):
            guard let record = records.withLock({ $0.first { $0.0 == id }?.1 }) else { return .text("no \(id)", status: 404) }
            return .response(headers: [("Content-Type", "application/json")], body: Array(record))
        case ("PUT", let id?):
            guard let record = object(Data(r.body)) else { return .text("bad", status: 400) }
            let stored = serialized(record)
            let found = records.withLock { rs -> Bool in
                guard let i = rs.firstIndex(where: { $0.0 == id }) else { return false }
                rs[i].1 = stored
                return true
            }
            return found ? json(record) : .text("no \(id)", status: 404)
        case ("DELETE", let id?):
            let found = records.withLock { rs -> Bool in
                guard let i = rs.firstIndex(where: { $0.0 == id }) else { return false }
                rs.remove(at: i)
                return true
            }
            return found ? .response(status: 204) : .text("no \(id)", status: 404)
        default:
            return .text("method not allowed", status: 405)
        }
    }

    private func object(_ data: Data) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    private func serialized(_ value: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])) ?? Data()
    }

    private func json(_ value: Any, status: Int = 200) -> TestServer.Reply {
        .response(status: status, headers: [("Content-Type", "application/json")], body: Array(serialized(value)))
    }
}

/// `a=1&b=x%20y` → ["a": "1", "b": "x y"].
func queryParameters(_ query: String?) -> [String: String] {
    var out: [String: String] = [:]
    for pair in (query ?? "").split(separator: "&") {
        let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
        out[kv[0]] = kv.count > 1 ? kv[1] : ""
    }
    return out
}
