import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Against a real nginx from Debian (installed by scripts/setup.sh).
final class NginxIntegrationTests: XCTestCase {
    func testSmallLargeAndChunkedResponsesOverOneConnection() async throws {
        let nginx = try requireNginx()
        let client = try makeClient()
        let small = try await client.send(try PocketRequest(nginx.url("/small")))
        XCTAssertEqual(small.status, 200)
        XCTAssertEqual(Array(small.body), NginxFixture.smallBody)
        XCTAssertEqual(small.headers["Server"]?.hasPrefix("nginx"), true)

        let large = try await client.send(try PocketRequest(nginx.url("/large")))
        XCTAssertEqual(large.body.count, NginxFixture.largeBody.count)
        XCTAssertTrue(Array(large.body) == NginxFixture.largeBody)
        XCTAssertTrue(large.timings.reusedConnection)

        let chunked = try await client.send(try PocketRequest(nginx.url("/chunked.shtml")))
        XCTAssertEqual(chunked.headers["Transfer-Encoding"], "chunked")
        XCTAssertEqual(Array(chunked.body), NginxFixture.chunkedBody)
        XCTAssertTrue(chunked.timings.reusedConnection)

        let head = try await client.send(try PocketRequest(method: .head, nginx.url("/large")))
        XCTAssertEqual(head.headers["Content-Length"], String(NginxFixture.largeBody.count))
        XCTAssertEqual(head.body.count, 0)
        let missing = try await client.send(try PocketRequest(nginx.url("/missing")))
        XCTAssertEqual(missing.status, 404)
    }

    func testKeepAliveReuseUnderConcurrency() async throws {
        let nginx = try requireNginx()
        let client = try makeClient { $0.maxConnectionsPerOrigin = 8 }
        let request = try PocketRequest(nginx.url("/small"))
        let reused = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<400 {
                group.addTask {
                    let r = try await client.send(request)
                    XCTAssertEqual(r.body.count, 13)
                    return r.timings.reusedConnection
                }
            }
            var n = 0
            for try await r in group where r { n += 1 }
            return n
        }
        XCTAssertGreaterThanOrEqual(reused, 400 - 8, "at most one new connection per pool slot")
        var stats = client.engine.stats
        XCTAssertLessThanOrEqual(stats.connections_opened, 8)
        // Sequential requests on the loop executor: still one connection each.
        try await withTaskExecutorPreference(client.executor) {
            try await sendSequentially(client, request, count: 50)
        }
        stats = client.engine.stats
        XCTAssertLessThanOrEqual(stats.connections_opened, 8)
    }
}
