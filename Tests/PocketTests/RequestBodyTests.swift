import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Request bodies from files and streams, Expect: 100-continue, early final
/// responses and upload progress, checked byte-exact on the test server.
final class RequestBodyTests: XCTestCase {
    private var server: TestServer!
    private var directory: URL!

    override func setUpWithError() throws {
        let server = try TestServer()
        server.keepsRequestBodies = false // digests are enough; uploads here are up to 64 MiB
        server.route("/upload") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-body-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock {
            server.shutdown()
            try? FileManager.default.removeItem(at: directory)
        }
        self.server = server
        self.directory = directory
    }

    /// A file of `size` pattern bytes; returns its URL.
    private func patternFile(_ size: Int, seed: UInt64 = 7) throws -> URL {
        try writePatternFile(directory.appendingPathComponent("body-\(size)-\(seed)"), size, seed: seed)
    }


    private func upload(_ body: PocketRequestBody, client: PocketClient? = nil, path: String = "/upload",
                        progress: PocketProgressHandler? = nil) async throws -> PocketResponse {
        try await (client ?? makeClient()).send(PocketRequest(method: .put, url: url(server, path), body: body), progress: progress)
    }

    func testFileBodyIsSentWithContentLengthByteExact() async throws {
        let size = 5 << 20 | 123
        let file = try patternFile(size)
        let r = try await upload(.file(file))
        XCTAssertEqual(r.text, "\(size) \(BytePattern.sha256(seed: 7, size: size))")
        let received = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(received.header("Content-Length"), String(size))
        XCTAssertNil(received.header("Transfer-Encoding"))

        // A slice of the file.
        let slice = try await upload(.file(file, offset: 1000, length: 4096))
        XCTAssertEqual(slice.text, "4096 \(BytePattern.sha256(seed: 7, range: 1000..<5096))")
        XCTAssertTrue(PocketRequestBody.file(file).isReplayable)
    }

    func testMissingOrShortFilesFailWithTheirOwnCode() async throws {
        await assertPocketError(.fileReadFailed) { try await self.upload(.file(self.directory.appendingPathComponent("missing"))) }
        let file = try patternFile(1000)
        await assertPocketError(.fileReadFailed) { try await self.upload(.file(file, length: 5000)) }
    }

    func testStreamWithoutLengthIsSentChunked() async throws {
        let size = 3 << 20 | 77
        let body = PocketRequestBody.stream(patternStream(size), length: nil)
        XCTAssertFalse(body.isReplayable)
        XCTAssertNil(body.length)
        let r = try await upload(body)
        XCTAssertEqual(r.text, "\(size) \(BytePattern.sha256(seed: 7, size: size))")
        let received = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(received.header("Transfer-Encoding"), "chunked")
        XCTAssertNil(received.header("Content-Length"))
    }

    func testStreamWithLengthUsesContentLengthAndMustMatchIt() async throws {
        let size = 1 << 20
        let r = try await upload(.stream(patternStream(size), length: size))
        XCTAssertEqual(r.text, "\(size) \(BytePattern.sha256(seed: 7, size: size))")
        XCTAssertEqual(server.receivedRequests.last?.header("Content-Length"), String(size))

        await assertPocketError(.requestBodyLengthMismatch) { try await self.upload(.stream(patternStream(size), length: size + 1)) }
        await assertPocketError(.requestBodyLengthMismatch) { try await self.upload(.stream(patternStream(size), length: size - 1)) }
    }

    func testAStreamThatThrowsFailsTheRequestWithItsError() async throws {
        struct Broken: Error {}
        let chunks = AsyncThrowingStream<Data, any Error> { c in
            c.yield(Data(repeating: 1, count: 1000))
            c.finish(throwing: Broken())
        }
        let error = await assertPocketError(.requestBodyStreamFailed) { try await self.upload(.stream(chunks, length: nil)) }
        XCTAssertTrue(error?.underlying is Broken, "\(String(describing: error))")
    }

    func testEarlyFinalResponseStopsTheUploadAndIsReturned() async throws {
        server.route("/small-only", respondsBeforeBody: true) { _ in .text("too large", status: 413) }
        let file = try patternFile(64 << 20)
        let client = try makeClient()
        let r = try await upload(.file(file), client: client, path: "/small-only")
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(r.text, "too large")
        XCTAssertLessThan(r.timings.bytesSent, 64 << 20, "the upload stopped early")
        // The connection was not pooled (the server would not read the rest).
        let next = try await client.send(PocketRequest(url: url(server, "/upload")))
        XCTAssertFalse(next.timings.reusedConnection)

        // A stream body too.
        let streamed = try await upload(.stream(patternStream(32 << 20), length: nil), client: client, path: "/small-only")
        XCTAssertEqual(streamed.status, 413)
    }

    func testAServerThatStopsReadingAnUploadIsAnIdleTimeout() async throws {
        server.route("/deaf", respondsBeforeBody: true) { _ in .stall(milliseconds: 5000) }
        let file = try patternFile(64 << 20)
        let client = try makeClient { $0.timeouts.read = .milliseconds(300) }
        let start = ContinuousClock.now
        await assertPocketError(.readTimeout) { try await self.upload(.file(file), client: client, path: "/deaf") }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(3), "the stalled upload ended on the idle timeout")
    }

    func testExpectContinueWaitsForTheServer() async throws {
        let size = 2 << 20
        let file = try patternFile(size)
        var request = PocketRequest(method: .put, url: url(server, "/upload"), body: .file(file))
        request.expectContinue = .seconds(5)
        let client = try makeClient()
        let start = ContinuousClock.now
        let r = try await client.send(request)
        XCTAssertEqual(r.text, "\(size) \(BytePattern.sha256(seed: 7, size: size))")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(4), "100 Continue came, no waiting for the timeout")
        XCTAssertEqual(server.receivedRequests.last?.header("Expect"), "100-continue")

        // Refused before the body: nothing of it is sent.
        server.route("/refuse", respondsBeforeBody: true) { _ in .text("no", status: 417) }
        request.url = url(server, "/refuse")
        let refused = try await client.send(request)
        XCTAssertEqual(refused.status, 417)
        XCTAssertLessThan(refused.timings.bytesSent, 1000, "only the head went out")

        // A server that never says 100: the body goes after the wait.
        server.sendsContinue = false
        request.url = url(server, "/upload")
        request.expectContinue = .milliseconds(300)
        let t0 = ContinuousClock.now
        let late = try await client.send(request)
        XCTAssertEqual(late.text, "\(size) \(BytePattern.sha256(seed: 7, size: size))")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - t0, .milliseconds(290))
    }

    func testUploadProgressIsMonotonicAndEndsAtTheTotal() async throws {
        let size = 8 << 20
        let file = try patternFile(size)
        let (updates, handler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let client = try makeClient(), target = url(server, "/upload")
        async let response = client.send(PocketRequest(method: .put, url: target, body: .file(file)), progress: handler)
        var uploads: [PocketTransferProgress] = []
        for await p in updates where p.direction == .upload { uploads.append(p) }
        let r = try await response
        XCTAssertEqual(r.status, 200)
        XCTAssertFalse(uploads.isEmpty)
        XCTAssertEqual(uploads.map(\.bytes), uploads.map(\.bytes).sorted(), "monotonic")
        XCTAssertTrue(uploads.allSatisfy { $0.total == size })
        XCTAssertEqual(uploads.last?.bytes, size)
        XCTAssertEqual(uploads.last?.isFinal, true)
        XCTAssertEqual(uploads.last?.percent, 100)

        // A chunked upload has no total until it is done.
        let (streamUpdates, streamHandler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let chunks = patternStream(size)
        async let chunked = client.send(PocketRequest(method: .put, url: target, body: .stream(chunks, length: nil)), progress: streamHandler)
        var streamed: [PocketTransferProgress] = []
        for await p in streamUpdates where p.direction == .upload { streamed.append(p) }
        _ = try await chunked
        XCTAssertTrue(streamed.dropLast().allSatisfy { $0.total == nil && $0.fraction == nil })
        XCTAssertEqual(streamed.last?.bytes, size)
    }

    func testFileUploadOverTLSIsByteExact() async throws {
        let certs = try TestCertificates.shared
        let tlsServer = try TestServer(tls: .localhost())
        defer { tlsServer.shutdown() }
        tlsServer.route("/upload") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        let size = 3 << 20 | 5
        let file = try patternFile(size, seed: 3)
        let client = try makeClient { $0.tls.caFile = certs.caCert }
        let r = try await client.send(PocketRequest(method: .put, url: URL(string: tlsServer.url(host: "localhost", path: "/upload"))!,
                                              body: .file(file)))
        XCTAssertEqual(r.text, "\(size) \(BytePattern.sha256(seed: 3, size: size))")
        let s = try await client.send(PocketRequest(method: .put, url: URL(string: tlsServer.url(host: "localhost", path: "/upload"))!,
                                              body: .stream(patternStream(size, seed: 3), length: nil)))
        XCTAssertEqual(s.text, "\(size) \(BytePattern.sha256(seed: 3, size: size))")
    }

    func testBodiesAreCodableExceptStreams() throws {
        let request = PocketRequest(method: .put, url: URL(string: "http://127.0.0.1/x")!, body: .file(URL(filePath: "/tmp/a"), offset: 3, length: 9))
        let back = try JSONDecoder().decode(PocketRequest.self, from: JSONEncoder().encode(request))
        XCTAssertEqual(back, request)
        let bytes = PocketRequest(method: .post, url: URL(string: "http://127.0.0.1/x")!, body: .text("hi"))
        XCTAssertEqual(try JSONDecoder().decode(PocketRequest.self, from: JSONEncoder().encode(bytes)).body?.data, Data("hi".utf8))
        let streamed = PocketRequest(method: .post, url: URL(string: "http://127.0.0.1/x")!,
                               body: .stream(AsyncStream<Data> { $0.finish() }, length: nil))
        XCTAssertThrowsError(try JSONEncoder().encode(streamed))
    }
}
