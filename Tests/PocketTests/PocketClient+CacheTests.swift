import Foundation
import XCTest
@testable import Pocket

/// The cache step of the request path (PocketClient+Cache.swift), driven
/// through a fake hop: freshness, revalidation, `willCache`, for a collected
/// and a streamed body alike.
final class CacheStepTests: XCTestCase {
    private let url = URL(string: "http://cache.test/doc")!

    private func client(_ hop: FakeHop, cache: PocketResponseCache = PocketResponseCache()) throws -> PocketClient {
        try hop.client { $0.handling.cache = cache }
    }

    func testAFreshResponseIsAnsweredFromTheStore() async throws {
        let hop = FakeHop([answer(200, ["Cache-Control": "max-age=600"], body: "stored")])
        let client = try client(hop)
        defer { Task { try? await client.shutdown() } }
        let first = try await client.send(PocketRequest(url: url))
        XCTAssertFalse(first.fromCache)
        let second = try await client.send(PocketRequest(url: url))
        XCTAssertTrue(second.fromCache)
        XCTAssertEqual(second.text, "stored")
        let streamed = try await client.stream(PocketRequest(url: url))
        XCTAssertTrue(streamed.fromCache)
        let streamedBody = try await streamed.body.collect(upTo: 100)
        XCTAssertEqual(streamedBody, Data("stored".utf8))
        let sunk = try await client.send(PocketRequest(url: url)) { _ in CollectingSink() }
        XCTAssertEqual(sunk.body.bytes, Data("stored".utf8))
        XCTAssertEqual(hop.requests.count, 1)
    }

    func testAStaleResponseIsRevalidatedAndA304AnswersFromTheStore() async throws {
        let hop = FakeHop { request, n in
            n == 1 ? answer(200, ["Cache-Control": "max-age=0", "ETag": "\"v1\""], body: "stored")
                : request.headers["If-None-Match"] == "\"v1\"" ? answer(304, ["ETag": "\"v1\""]) : answer(200, body: "fresh")
        }
        let client = try client(hop)
        defer { Task { try? await client.shutdown() } }
        _ = try await client.send(PocketRequest(url: url))
        let second = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(second.status, 200)
        XCTAssertTrue(second.revalidated)
        XCTAssertEqual(second.text, "stored")
        let streamed = try await client.stream(PocketRequest(url: url))
        XCTAssertTrue(streamed.revalidated)
        let streamedBody = try await streamed.body.collect(upTo: 100)
        XCTAssertEqual(streamedBody, Data("stored".utf8))
        XCTAssertEqual(hop.requests.count, 3)
        XCTAssertEqual(hop.requests[1].headers["If-None-Match"], "\"v1\"")
        XCTAssertEqual(hop.requests[2].headers["If-None-Match"], "\"v1\"")
    }

    func testWillCacheRefusingAResponseKeepsItOutOfTheStore() async throws {
        let hop = FakeHop([answer(200, ["Cache-Control": "max-age=600"], body: "secret")])
        let cache = PocketResponseCache(willCache: { _, _ in nil })
        let client = try client(hop, cache: cache)
        defer { Task { try? await client.shutdown() } }
        _ = try await client.send(PocketRequest(url: url))
        let second = try await client.send(PocketRequest(url: url))
        XCTAssertFalse(second.fromCache)
        XCTAssertEqual(hop.requests.count, 2)
    }

    func testWillCacheChangesWhatIsStored() async throws {
        let hop = FakeHop([answer(200, ["Cache-Control": "max-age=600"], body: "original")])
        let cache = PocketResponseCache(willCache: { _, response in
            var changed = response
            changed.body = Data("changed".utf8)
            return changed
        })
        let client = try client(hop, cache: cache)
        defer { Task { try? await client.shutdown() } }
        let first = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(first.text, "original")
        let second = try await client.send(PocketRequest(url: url))
        XCTAssertTrue(second.fromCache)
        XCTAssertEqual(second.text, "changed")
    }

    func testAStreamedResponseIsStoredAsItIsRead() async throws {
        let hop = FakeHop([answer(200, ["Cache-Control": "max-age=600"], body: "streamed")])
        let client = try client(hop)
        defer { Task { try? await client.shutdown() } }
        let first = try await client.stream(PocketRequest(url: url))
        let streamedBody = try await first.body.collect(upTo: 100)
        XCTAssertEqual(streamedBody, Data("streamed".utf8))
        let second = try await client.send(PocketRequest(url: url))
        XCTAssertTrue(second.fromCache)
        XCTAssertEqual(second.text, "streamed")
        XCTAssertEqual(hop.requests.count, 1)
    }
}
