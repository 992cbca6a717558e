import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Bodies both ways against a real nginx: gzip made by nginx decoded
/// byte-exact (whole and streamed), and a download resumed with nginx's own
/// `Range`/`If-Range` handling.
final class NginxBodyTests: XCTestCase {
    func testGzipFromNginxIsDecodedByteExactWholeAndStreamed() async throws {
        let nginx = try requireNginx()
        let client = try makeClient()
        let whole = try await client.send(try PocketRequest(nginx.url("/text.txt")))
        XCTAssertEqual(whole.headers["Content-Encoding"], "gzip", "nginx compressed it")
        XCTAssertTrue(Array(whole.body) == NginxFixture.textBody, "decoded byte-exact")
        XCTAssertLessThan(whole.timings.wireBytesReceived, NginxFixture.textBody.count / 2, "the wire carried the gzip")

        let streamed = try await client.stream(try PocketRequest(nginx.url("/text.txt")))
        let collected = try await streamed.body.collect(upTo: 1 << 20)
        XCTAssertTrue(Array(collected) == NginxFixture.textBody)

        var plain = try PocketRequest(nginx.url("/text.txt"))
        plain.headers["Accept-Encoding"] = "identity"
        let identity = try await client.send(plain)
        XCTAssertNil(identity.headers["Content-Encoding"])
        XCTAssertTrue(Array(identity.body) == NginxFixture.textBody)
    }

    func testDownloadResumedFromAPartialFileWithNginxRanges() async throws {
        let nginx = try requireNginx()
        let client = try makeClient()
        let head = try await client.send(try PocketRequest(method: .head, nginx.url("/large")))
        let etag = try XCTUnwrap(head.headers["ETag"])
        let directory = FileManager.default.temporaryDirectory.appending(path: "pocket-nginx-dl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let partial = directory.appending(path: ".large.partial")
        let have = 1_234_567
        try Data(NginxFixture.largeBody[0..<have]).write(to: partial)
        let destination = directory.appending(path: "large")
        let resume = PocketResumeData(request: try PocketRequest(nginx.url("/large")), destination: destination,
                                temporaryFile: partial, bytesReceived: have, etag: etag,
                                totalBytes: NginxFixture.largeBody.count)
        let done = try await client.downloadTask(resumingWith: resume).response()
        XCTAssertEqual(done.status, 206)
        XCTAssertTrue(done.resumed)
        XCTAssertEqual(done.headers["Content-Range"], "bytes \(have)-\(NginxFixture.largeBody.count - 1)/\(NginxFixture.largeBody.count)")
        XCTAssertTrue(Array(try Data(contentsOf: destination)) == NginxFixture.largeBody)

        // A stale validator: nginx ignores the range and sends it whole; the file restarts.
        try Data(repeating: 0, count: have).write(to: partial)
        var stale = resume
        stale.etag = "\"not-the-current-one\""
        let restarted = try await client.downloadTask(resumingWith: stale).response()
        XCTAssertEqual(restarted.status, 200)
        XCTAssertFalse(restarted.resumed)
        XCTAssertTrue(Array(try Data(contentsOf: destination)) == NginxFixture.largeBody)
    }
}
