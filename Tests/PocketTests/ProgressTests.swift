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
        XCTAssertTrue(plainReports.allSatisfy { $0.total == nil && $0.fraction == nil }, "chunked: no total unless a header is named, the last report included: \(plainReports)")
        XCTAssertEqual(plainReports.last?.isFinal, true)
        XCTAssertEqual(plainReports.last?.bytes, 64 * 16_384, "the final report counts every byte")
        try await client.shutdown()
    }

    /// A compressed body's decoded size is never announced: every report,
    /// the last included, has a nil total (its wire figures give the fraction).
    func testCompressedDownloadsKeepANilTotalToTheEnd() async throws {
        let server = try TestServer()
        let client = try makeClient()
        defer { server.shutdown() }
        server.route("/gz") { _ in .response(headers: [("Content-Encoding", "gzip")], body: CompressedBodies.gzip) }
        server.route("/gzc") { _ in .chunked(headers: [("Content-Encoding", "gzip")], chunks: [CompressedBodies.gzip]) }
        for path in ["/gz", "/gzc"] {
            let (updates, handler) = PocketProgressHandler.stream(interval: .milliseconds(1))
            let response = try await client.send(PocketRequest(url: url(server, path)), progress: handler)
            XCTAssertEqual(response.text, CompressedBodies.text)
            var reports: [PocketTransferProgress] = []
            for await p in updates where p.direction == .download { reports.append(p) }
            let last = try XCTUnwrap(reports.last, path)
            XCTAssertTrue(last.isFinal, path)
            XCTAssertEqual(last.bytes, CompressedBodies.text.utf8.count, path)
            XCTAssertTrue(reports.allSatisfy { $0.total == nil }, "\(path): \(reports)")
        }
        // The header opt-in still gives the decoded total, to the last report.
        var (updates, handler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        handler.contentLengthHeader = "X-Decoded-Length"
        server.route("/gzd") { _ in
            .response(headers: [("Content-Encoding", "gzip"), ("X-Decoded-Length", "\(CompressedBodies.text.utf8.count)")],
                      body: CompressedBodies.gzip)
        }
        _ = try await client.send(PocketRequest(url: url(server, "/gzd")), progress: handler)
        var reports: [PocketTransferProgress] = []
        for await p in updates where p.direction == .download { reports.append(p) }
        XCTAssertEqual(reports.last?.total, CompressedBodies.text.utf8.count)
        XCTAssertEqual(reports.last?.percent, 100)
        try await client.shutdown()
    }
}
