import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Paging three ways (Link headers, custom headers, body keys), as an
/// AsyncSequence and with next()/previous(); and the Link header parser.
final class PipePagingTests: XCTestCase {
    struct Item: Codable, Sendable, Equatable {
        var id: Int
    }

    private var server: TestServer!
    private var client: PocketClient!
    private var pipeline: PocketPipeline!
    /// Seven items, three to a page: pages 1, 2, 3 hold 3, 3 and 1.
    private let pageSize = 3, itemCount = 7

    override func setUp() async throws {
        server = try TestServer()
        client = try makeClient()
        pipeline = PocketPipeline(baseURL: URL(string: server.url("/api"))!, client: client)
        let (size, count) = (pageSize, itemCount)
        let lastPage = (count + size - 1) / size
        @Sendable func page(_ r: TestServer.Request) -> (Int, String) {
            let n = Int(queryParameters(r.query)["page"] ?? "1") ?? 1
            let ids = ((n - 1) * size..<min(n * size, count)).map { "{\"id\":\($0 + 1)}" }
            return (n, "[" + ids.joined(separator: ",") + "]")
        }
        // RFC 8288 links, absolute for next and relative for prev, with more params and rels around.
        server.route("/api/linked") { [base = server.baseURL] r in
            let (n, body) = page(r)
            var links: [String] = [#"<\#(base)/api/linked?page=1>; rel="first""#]
            if n < lastPage { links.append(#"<\#(base)/api/linked?page=\#(n + 1)>; title="next, please"; rel="next""#) }
            if n > 1 { links.append("</api/linked?page=\(n - 1)>; rel=\"prev start\"") }
            return .response(headers: [("Content-Type", "application/json"), ("Link", links.joined(separator: ", "))],
                             body: Array(body.utf8))
        }
        server.route("/api/headered") { r in
            let (n, body) = page(r)
            var headers = [("Content-Type", "application/json")]
            if n < lastPage { headers.append(("X-Next-Page", "?page=\(n + 1)")) }
            if n > 1 { headers.append(("X-Previous-Page", "/api/headered?page=\(n - 1)")) }
            return .response(headers: headers, body: Array(body.utf8))
        }
        // Body keys: next as query parameters to set, previous as a URL.
        server.route("/api/bodied") { r in
            let (n, items) = page(r)
            let next = n < lastPage ? "{\"page\": \(n + 1)}" : "null"
            let previous = n > 1 ? "\"/api/bodied?page=\(n - 1)\"" : "null"
            let body = #"{"data": \#(items), "paging": {"next": \#(next), "previous": \#(previous)}}"#
            return .response(headers: [("Content-Type", "application/json")], body: Array(body.utf8))
        }
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

    private func walk(_ pipe: Pocket.PocketPipe<Item>) async throws {
        var sizes: [Int] = [], ids: [Int] = []
        for try await page in pipe.pages() {
            sizes.append(page.items.count)
            ids += page.items.map(\.id)
        }
        XCTAssertEqual(sizes, [3, 3, 1], pipe.configuration.name)
        XCTAssertEqual(ids, Array(1...7), pipe.configuration.name)

        let first = try await pipe.firstPage()
        XCTAssertNil(first.previousURL)
        let none = try await first.previous()
        XCTAssertNil(none, "no page before the first")
        let second = try unwrap(try await first.next())
        let third = try unwrap(try await second.next())
        XCTAssertEqual(third.items.map(\.id), [7])
        XCTAssertNil(third.nextURL)
        let beyond = try await third.next()
        XCTAssertNil(beyond, "no page after the last")
        let back = try unwrap(try await third.previous())
        XCTAssertEqual(back.items.map(\.id), [4, 5, 6], pipe.configuration.name)
        XCTAssertEqual(back.response.url?.query, "page=2")
    }

    func testLinkHeaderPagingIsTheDefault() async throws {
        let pipe = pipeline.pipe(Item.self, name: "linked")
        try await walk(pipe)
        let firstRead = try await pipe.read()
        XCTAssertEqual(firstRead.map(\.id), [1, 2, 3], "read() is the first page")
    }

    func testCustomHeaderPaging() async throws {
        try await walk(pipeline.pipe(Item.self, name: "headered") { $0.paging = .headers(next: "X-Next-Page", previous: "X-Previous-Page") })
    }

    func testBodyKeyPaging() async throws {
        let pipe = pipeline.pipe(Item.self, name: "bodied") {
            $0.paging = .body(next: "paging.next", previous: "paging.previous", items: "data")
        }
        try await walk(pipe)
        let filtered = try await pipe.read(params: ["page": "3"])
        XCTAssertEqual(filtered.map(\.id), [7], "read(params:) finds the records under the items key")
    }

    func testFirstPageParametersAndALoopingNextLink() async throws {
        let pipe = pipeline.pipe(Item.self, name: "linked") { $0.pageParameters = ["page": "2"] }
        let page = try await pipe.firstPage()
        XCTAssertEqual(page.items.map(\.id), [4, 5, 6])
        XCTAssertEqual(server.receivedRequests.last?.target, "/api/linked?page=2")

        server.route("/api/loop") { _ in
            .response(headers: [("Content-Type", "application/json"), ("Link", "</api/loop>; rel=next")], body: Array("[]".utf8))
        }
        let loop = pipeline.pipe(Item.self, name: "loop")
        var pages = 0
        await assertPocketError(.pagingLoop) {
            for try await _ in loop.pages() { pages += 1 }
        }
        XCTAssertEqual(pages, 1, "the first page came; its next link leads back to it")
    }

    func testLinkHeaderParsing() {
        let values = [
            #"<https://a.example/x?a=1,2>; rel="next prev"; title="one, two", <broken; rel=last"#,
            ##"  </rel>;rel=PREVIOUS ; rel=ignored ,<https://b.example/>; anchor="#c"; rel="next""##,
            "garbage, <https://c.example/>; rel=first",
        ]
        let links = LinkHeader.parse(values)
        XCTAssertEqual(links.map(\.target), ["https://a.example/x?a=1,2", "/rel", "https://b.example/", "https://c.example/"])
        XCTAssertEqual(links.map(\.relations), [["next", "prev"], ["previous"], ["next"], ["first"]])
        XCTAssertEqual(LinkHeader.target(rel: "NEXT", in: values), "https://a.example/x?a=1,2")
        XCTAssertEqual(LinkHeader.target(rel: "previous", in: values), "/rel")
        XCTAssertNil(LinkHeader.target(rel: "last", in: values), "a link-value without its closing > is skipped")
    }
}

/// `XCTUnwrap` for a value already awaited.
func unwrap<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) throws -> T {
    try XCTUnwrap(value, file: file, line: line)
}
