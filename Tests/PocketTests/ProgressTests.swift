import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Download totals from a header the user names (MTPocket's `contentLengthHeader`).
final class ProgressTests: XCTestCase {
    func testAContentLengthHeaderGivesChunkedBodiesATotal() async throws {
        let server = try TestServer()
        let client = try makeClient()
        defer { server.shutdown() }
        let chunks = (0..<64).map { BytePattern.bytes(seed: UInt64($0), range: 0..<16_384) }
        server.route("/c") { _ in .chunked(headers: [("X-Stream-Length", "\(64 * 16_384)")], chunks: chunks) }

        var (updates, handler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        handler.contentLengthHeader = "X-Stream-Length"
        _ = try await client.send(PocketRequest(url: url(server, "/c")), progress: handler)
        var reports: [PocketTransferProgress] = []
        for await p in updates where p.direction == .download { reports.append(p) }
        XCTAssertFalse(reports.isEmpty)
        XCTAssertTrue(reports.allSatisfy { $0.total == 64 * 16_384 }, "\(reports)")
        XCTAssertEqual(reports.last?.percent, 100)

        let (plainUpdates, plain) = PocketProgressHandler.stream(interval: .milliseconds(1))
        _ = try await client.send(PocketRequest(url: url(server, "/c")), progress: plain)
        var plainReports: [PocketTransferProgress] = []
        for await p in plainUpdates where p.direction == .download { plainReports.append(p) }
        XCTAssertTrue(plainReports.dropLast().allSatisfy { $0.total == nil }, "chunked: no total unless a header is named")
        XCTAssertEqual(plainReports.last?.total, 64 * 16_384, "the final report knows the size")
        try await client.shutdown()
    }
}
