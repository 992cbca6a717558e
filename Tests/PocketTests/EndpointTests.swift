import Foundation
import XCTest
@testable import Pocket
import PocketTesting
import PocketTestSupport

/// Parameter packing tables and endpoint types, on the wire and over the stub transport.
final class EndpointTests: XCTestCase {
    struct Profile: Encodable, Sendable {
        var firstName = "Ada"
        var userID = 7
        var homeURLString = "http://x"
        var already_snake = true
        var address = Address()
        var tagNames = ["a", "b"]
        var middleName: String? = nil
        @PocketUnpacked var localCacheKey = "secret"
        var createdAt = Date(timeIntervalSince1970: 1_700_000_000)
    }

    struct Address: Encodable, Sendable, Hashable {
        var streetName = "Main St"
        var zipCode = "12345"
    }

    func testPackingTable() throws {
        let packed = try PocketParameterPacking().pack(Profile())
        XCTAssertEqual(packed, [
            "first_name": "Ada", "user_id": 7, "home_url_string": "http://x", "already_snake": true,
            "address": ["street_name": "Main St", "zip_code": "12345"], "tag_names": ["a", "b"],
            "created_at": 1_700_000_000,
        ])
    }

    func testKeyConversionTable() {
        let cases: [(String, String)] = [
            ("userId", "user_id"), ("userID", "user_id"), ("URLString", "url_string"), ("homeURLString", "home_url_string"),
            ("already_snake", "already_snake"), ("a", "a"), ("page2Size", "page2_size"), ("isHTTPS", "is_https"),
            ("lowercase", "lowercase"), ("ID", "id"),
        ]
        for (name, expected) in cases {
            XCTAssertEqual(PocketParameterPacking.convert(name, .snakeCase(separator: "_")), expected, name)
        }
        XCTAssertEqual(PocketParameterPacking.convert("userIdNumber", .snakeCase(separator: "-")), "user-id-number")
        XCTAssertEqual(PocketParameterPacking.convert("userId", .unchanged), "userId")
    }

    func testSeparatorIgnoredFieldsAndDateStyles() throws {
        var packing = PocketParameterPacking(keys: .snakeCase(separator: "-"), dates: .millisecondsSince1970, ignored: ["tagNames", "zip-code"])
        var packed = try packing.pack(Profile())
        XCTAssertEqual(packed["first-name"], "Ada")
        XCTAssertNil(packed["tag-names"], "ignored by Swift name")
        XCTAssertEqual(packed["address"], ["street-name": "Main St"], "ignored by converted name, nested")
        XCTAssertEqual(packed["created-at"], 1_700_000_000_000)
        XCTAssertNil(packed["local-cache-key"], "@Unpacked is never sent")
        packing.dates = .iso8601
        packed = try packing.pack(Profile())
        XCTAssertEqual(packed["created-at"], "2023-11-14T22:13:20Z")
        packing.dates = .custom { date in "day \(Int(date.timeIntervalSince1970) / 86_400)" }
        XCTAssertEqual(try packing.pack(Profile())["created-at"], "day 19675")
        packing.keys = .unchanged
        XCTAssertEqual(try packing.pack(Profile())["firstName"], "Ada")
    }

    func testPackingNeedsNamedFields() {
        XCTAssertThrowsError(try PocketParameterPacking().pack([1, 2, 3])) { error in
            XCTAssertEqual((error as? PocketError)?.code, .encodingFailed)
        }
        XCTAssertThrowsError(try PocketParameterPacking().pack(Double.nan)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .encodingFailed)
        }
        XCTAssertEqual(try PocketParameterPacking().pack(PocketNoParameters()), [:])
    }

    // MARK: Endpoints on the wire

    struct Post: Codable, Sendable, Equatable {
        var id: Int
        var title: String
    }

    struct ListPosts: PocketEndpoint {
        typealias Output = [Post]
        struct Parameters: Encodable, Sendable { var userId: Int; var sinceDate: Date; @PocketUnpacked var note = "local" }
        let parameters: Parameters
        var path: String { "users/{user_id}/posts" }
        var query: [String: PocketParameterValue] { ["page": 2] }
        var headers: PocketHeaders { ["X-Client": "endpoint-test"] }
    }

    struct CreatePost: PocketEndpoint {
        typealias Output = Post
        struct Parameters: Encodable, Sendable { var title: String; var authorId: Int }
        let parameters: Parameters
        var method: PocketMethod { .post }
        var path: String { "posts" }
        var format: PocketContentFormat?
        var timeout: Duration? { .seconds(7) }
    }

    struct DeletePost: PocketEndpoint {
        typealias Output = PocketResponse
        struct Parameters: Encodable, Sendable { var id: Int; var hardDelete: Bool }
        let parameters: Parameters
        var method: PocketMethod { .delete }
        var path: String { "posts/{id}" }
        var retryPolicy: PocketRetryPolicy? { PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero)) }
    }

    private func apiClient(_ server: TestServer, _ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
        try makeClient {
            $0.baseURL = URL(string: server.url("/api/"))
            configure(&$0)
        }
    }

    func testGetPacksIntoTheQueryAndFillsThePath() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/api/users/7/posts") { _ in .text(#"[{"id":1,"title":"hi"}]"#, headers: [("Content-Type", "application/json")]) }
        let client = try apiClient(server)
        let endpoint = ListPosts(parameters: .init(userId: 7, sinceDate: Date(timeIntervalSince1970: 1_700_000_000)))
        let posts = try await client.send(endpoint)
        XCTAssertEqual(posts, [Post(id: 1, title: "hi")])
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.method, "GET")
        XCTAssertEqual(got.path, "/api/users/7/posts")
        let query = Set((got.query ?? "").split(separator: "&").map(String.init))
        XCTAssertEqual(query, ["page=2", "since_date=1700000000"], "user_id went to the path, note was never packed")
        XCTAssertEqual(got.header("X-Client"), "endpoint-test")
        XCTAssertEqual(got.bodyLength, 0)
    }

    func testPostPacksIntoAJSONOrFormBody() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/api/posts") { _ in .text(#"{"id":9,"title":"new"}"#, status: 201, headers: [("Content-Type", "application/json")]) }
        let client = try apiClient(server)
        let created = try await client.send(CreatePost(parameters: .init(title: "new", authorId: 3), format: .json))
        XCTAssertEqual(created, Post(id: 9, title: "new"))
        var got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.method, "POST")
        XCTAssertNil(got.query)
        XCTAssertEqual(String(decoding: got.body, as: UTF8.self), #"{"author_id":3,"title":"new"}"#)
        XCTAssertEqual(got.header("Content-Type"), "application/json")

        _ = try await client.send(CreatePost(parameters: .init(title: "a b", authorId: 3), format: .form))
        got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(String(decoding: got.body, as: UTF8.self), "author_id=3&title=a+b")
        XCTAssertEqual(got.header("Content-Type"), "application/x-www-form-urlencoded")
        let request = try CreatePost(parameters: .init(title: "t", authorId: 1), format: .json).request(on: client)
        XCTAssertEqual(request.timeouts?.total, .seconds(7), "the endpoint's timeout")
    }

    func testDeleteUsesTheQueryAndItsOwnRetryPolicyAndObserverKey() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let count = Recorder<Int>()
        server.route("/api/posts/5") { _ in
            count.append(1)
            return count.values.count == 1 ? .text("busy", status: 503) : .response(status: 204, headers: [], body: [])
        }
        let client = try apiClient(server) { $0.handling.clock = RecordingClock() }
        let seen = Recorder<PocketTaskState>()
        client.addObserver(endpoint: "posts/{id}") { seen.append($0.state) }
        let response = try await client.send(DeletePost(parameters: .init(id: 5, hardDelete: true)))
        XCTAssertEqual(response.status, 204)
        XCTAssertEqual(server.receivedRequests.map(\.target), ["/api/posts/5?hard_delete=true", "/api/posts/5?hard_delete=true"])
        XCTAssertEqual(seen.values, [.running, .retrying, .running, .finished], "one observer for every post id")
    }

    struct CommentOnPost: PocketEndpoint {
        typealias Output = PocketResponse
        struct Parameters: Encodable, Sendable { var postId: Int; var text: String; @PocketUnpacked var draft: String? = "x" }
        let parameters: Parameters
        var method: PocketMethod { .put }
        var path: String { "posts/{post_id}/comments" }
        var query: [String: PocketParameterValue] { ["notify": false] }
    }

    func testBodyMethodFillsThePathFromPackedParametersAndSendsTheRestAsBody() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/api/posts/3/comments") { _ in .text("ok") }
        let client = try apiClient(server)
        _ = try await client.send(CommentOnPost(parameters: .init(postId: 3, text: "nice")))
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(got.method, "PUT")
        XCTAssertEqual(got.target, "/api/posts/3/comments?notify=false")
        XCTAssertEqual(String(decoding: got.body, as: UTF8.self), #"{"text":"nice"}"#, "post_id filled the path only")
    }

    struct TemplatedPing: PocketEndpoint {
        typealias Output = PocketResponse
        var path: String { "ping" }
        var template: String? { "internal" }
    }

    func testDefaultQueryAndTemplatesOfTheAPILayerApply() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/api/users/1/posts") { _ in .text("[]", headers: [("Content-Type", "application/json")]) }
        server.route("/internal/ping") { _ in .text("pong") }
        let client = try apiClient(server) { $0.defaultQuery = ["api_key": "k"] }
        _ = try await client.send(ListPosts(parameters: .init(userId: 1, sinceDate: Date(timeIntervalSince1970: 5))))
        let query = Set((server.receivedRequests.last?.query ?? "").split(separator: "&").map(String.init))
        XCTAssertEqual(query, ["api_key=k", "page=2", "since_date=5"])
        var template = PocketRequestTemplate()
        template.baseURL = URL(string: server.url("/internal/"))
        template.headers = ["X-Internal": "1"]
        client.register(template, as: "internal")
        let pong = try await client.send(TemplatedPing())
        XCTAssertEqual(pong.text, "pong")
        XCTAssertEqual(server.receivedRequests.last?.header("X-Internal"), "1")
    }

    func testErrorStatusIsAnErrorForADecodedOutput() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/api/posts") { _ in .text(#"{"error":"nope"}"#, status: 422, headers: [("Content-Type", "application/json")]) }
        let client = try apiClient(server)
        await assertPocketError(.unacceptableStatus) { try await client.send(CreatePost(parameters: .init(title: "x", authorId: 1), format: .json)) }
    }

    func testStubTransportDrivesTheSameEndpoints() async throws {
        let stub = PocketStubTransport()
        stub.stub(.get, "/v1/users/{id}/posts", .json(#"[{"id":3,"title":"stubbed"}]"#))
        stub.stub(.post, "/v1/posts", .status(503), .json(#"{"id":4,"title":"made"}"#, status: 201))
        let client = try makeClient {
            $0.baseURL = URL(string: "http://api.invalid/v1/")
            $0.handling.transport = stub
            $0.handling.clock = RecordingClock()
            $0.handling.retry = PocketRetryPolicy(nonIdempotent: .always)
        }
        let posts = try await client.send(ListPosts(parameters: .init(userId: 12, sinceDate: Date(timeIntervalSince1970: 0))))
        XCTAssertEqual(posts, [Post(id: 3, title: "stubbed")])
        let made = try await client.send(CreatePost(parameters: .init(title: "made", authorId: 1), format: .json))
        XCTAssertEqual(made, Post(id: 4, title: "made"))
        XCTAssertEqual(stub.requests.map(\.url.absoluteString).first, "http://api.invalid/v1/users/12/posts?page=2&since_date=0")
        XCTAssertEqual(stub.requests.count, 3, "the 503 was retried against the stub")
    }

    func testEndpointsThroughAQueue() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/api/posts/1") { _ in .response(status: 204, headers: [], body: []) }
        let client = try apiClient(server)
        let queue = PocketRequestQueue(client: client, maxConcurrent: 1)
        let response = try await queue.send(DeletePost(parameters: .init(id: 1, hardDelete: false)), priority: .high)
        XCTAssertEqual(response.status, 204)
        XCTAssertEqual(server.receivedRequests.last?.target, "/api/posts/1?hard_delete=false")
    }
}
