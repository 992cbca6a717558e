import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Response bodies read as they arrive: byte-exact, decoded, bounded by
/// backpressure, strict about truncation, cancelled when dropped.
final class StreamingResponseTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    func testChunksArriveInOrderAndByteExact() async throws {
        let size = 8 << 20 | 321
        server.route("/plain") { _ in .generated(size: size, seed: 11) }
        server.route("/chunked") { _ in .generated(size: size, seed: 11, chunked: true, pieceSize: 70_000) }
        let client = try makeClient()
        for path in ["/plain", "/chunked"] {
            let response = try await client.stream(PocketRequest(url: url(server, path)))
            XCTAssertEqual(response.status, 200)
            let hasher = SHA256Hasher()
            var count = 0, chunks = 0
            for try await chunk in response.body {
                chunk.withUnsafeBytes { hasher.update($0) }
                count += chunk.count
                chunks += 1
            }
            XCTAssertEqual(count, size, path)
            XCTAssertGreaterThan(chunks, 1, "delivered as it came, not at the end")
            XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 11, size: size), path)
        }
    }

    func testCompressedBodiesStreamDecoded() async throws {
        server.route("/gz") { _ in .response(headers: [("Content-Encoding", "gzip")], body: CompressedBodies.gzip) }
        let r = try await makeClient().stream(PocketRequest(url: url(server, "/gz")))
        let text = try await r.body.collect(upTo: 1 << 20)
        XCTAssertEqual(String(decoding: text, as: UTF8.self), CompressedBodies.text)
    }

    func testCollectFailsPastItsLimitAndCancels() async throws {
        server.route("/big") { _ in .generated(size: 4 << 20) }
        let client = try makeClient()
        let r = try await client.stream(PocketRequest(url: url(server, "/big")))
        await assertPocketError(.bodyTooLarge) { try await r.body.collect(upTo: 1 << 20) }
        let ok = try await client.stream(PocketRequest(url: url(server, "/big")))
        let all = try await ok.body.collect(upTo: 4 << 20)
        XCTAssertEqual(all.count, 4 << 20)
    }

    func testASlowReaderKeepsMemoryBoundedWhileTheServerKeepsSending() async throws {
        let size = 96 << 20
        server.route("/firehose") { _ in .generated(size: size, seed: 2) }
        let client = try makeClient()
        let bufferSize = 256 << 10
        let rssBefore = residentBytes()
        let r = try await client.stream(PocketRequest(url: url(server, "/firehose")), bufferSize: bufferSize)
        var received = 0, maxBuffered = 0, maxRSS = rssBefore
        let hasher = SHA256Hasher()
        var iterator = r.body.makeAsyncIterator()
        // First read slowly: the server could send the whole body in a
        // fraction of this time, so the engine must be holding it back.
        let slowUntil = ContinuousClock.now + .milliseconds(1500)
        while let chunk = try await iterator.next() {
            chunk.withUnsafeBytes { hasher.update($0) }
            received += chunk.count
            maxBuffered = max(maxBuffered, r.body.bufferedBytes)
            if ContinuousClock.now < slowUntil {
                try await Task.sleep(for: .milliseconds(20))
                maxRSS = max(maxRSS, residentBytes())
            }
        }
        XCTAssertEqual(received, size)
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 2, size: size), "nothing lost while paused")
        XCTAssertLessThanOrEqual(maxBuffered, bufferSize + (256 << 10), "at most the buffer plus one read")
        XCTAssertLessThan(maxRSS - rssBefore, 32 << 20, "client memory stayed bounded while the reader lagged")
    }

    func testSlowReaderIsNotAReadTimeout() async throws {
        server.route("/some") { _ in .generated(size: 2 << 20) }
        let client = try makeClient { $0.timeouts.read = .milliseconds(200) }
        let r = try await client.stream(PocketRequest(url: url(server, "/some")), bufferSize: 64 << 10)
        var count = 0, pauses = 0
        for try await chunk in r.body {
            count += chunk.count
            if pauses < 3 { // each pause outlasts the read timeout
                pauses += 1
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        XCTAssertEqual(count, 2 << 20, "a paused body is our delay, not the server's silence")
    }

    func testTruncatedBodyEndsTheIterationWithAnError() async throws {
        server.route("/cut") { _ in .closeMidBody(declaredLength: 100_000, sentPrefix: Array(repeating: 7, count: 5000)) }
        let r = try await makeClient().stream(PocketRequest(url: url(server, "/cut")))
        var got = 0
        do {
            for try await chunk in r.body { got += chunk.count }
            XCTFail("a short body must not end quietly")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .truncatedBody)
            XCTAssertEqual(error.response?.status, 200)
        }
        XCTAssertEqual(got, 5000)
    }

    func testErrorsBeforeTheHeadAreThrownByStream() async throws {
        server.route("/reset") { _ in .reset }
        await assertPocketError(.connectionReset) { try await makeClient().stream(PocketRequest(url: url(self.server, "/reset"))) }
    }

    func testDroppingTheBodyCancelsTheTransfer() async throws {
        server.route("/endless") { _ in .generated(size: 1 << 30, pieceSize: 64 << 10, delayMillisecondsPerPiece: 5) }
        let client = try makeClient()
        do {
            let r = try await client.stream(PocketRequest(url: url(server, "/endless")))
            var it = r.body.makeAsyncIterator()
            _ = try await it.next()
        }
        await assertEventually("the server saw the connection close") { self.server.openConnections == 0 }
        await assertEventually("the engine has nothing in flight") { client.engine.pendingRequests == 0 }
    }

    func testCancellingTheReaderCancelsTheRequest() async throws {
        server.route("/slow") { _ in .generated(size: 1 << 30, pieceSize: 16 << 10, delayMillisecondsPerPiece: 50) }
        let client = try makeClient()
        let r = try await client.stream(PocketRequest(url: url(server, "/slow")))
        let reader = Task {
            var n = 0
            for try await chunk in r.body { n += chunk.count }
            return n
        }
        try await Task.sleep(for: .milliseconds(200))
        reader.cancel()
        do {
            _ = try await reader.value
            XCTFail("expected cancellation")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .cancelled)
        }
    }

    func testHeadAndNoContentStreamsEndAtOnce() async throws {
        server.route("/empty") { _ in .response(status: 204) }
        let client = try makeClient()
        let r = try await client.stream(PocketRequest(url: url(server, "/empty")))
        XCTAssertEqual(r.status, 204)
        let all = try await r.body.collect(upTo: 10)
        XCTAssertEqual(all.count, 0)
    }

    func testDownloadProgressForCompressedBodiesHasNoGuessedTotal() async throws {
        server.route("/gz") { _ in .response(headers: [("Content-Encoding", "gzip")], body: CompressedBodies.gzip) }
        let (updates, handler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let client = try makeClient(), target = url(server, "/gz")
        async let response = client.send(PocketRequest(url: target), progress: handler)
        var reports: [PocketTransferProgress] = []
        for await p in updates { reports.append(p) }
        let r = try await response
        XCTAssertEqual(r.text, CompressedBodies.text)
        let final = try XCTUnwrap(reports.last)
        XCTAssertTrue(final.isFinal)
        XCTAssertEqual(final.direction, .download)
        XCTAssertEqual(final.bytes, CompressedBodies.text.utf8.count)
        XCTAssertEqual(final.wireBytes, CompressedBodies.gzip.count)
        XCTAssertEqual(final.wireTotal, CompressedBodies.gzip.count)
        XCTAssertTrue(reports.dropLast().allSatisfy { $0.total == nil }, "no decoded total before the end")
    }
}
