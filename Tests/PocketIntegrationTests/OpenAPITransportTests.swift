import Foundation
import HTTPTypes
import OpenAPIRuntime
import XCTest
import Pocket
import PocketOpenAPI
import PocketTestSupport

/// The client generated from `OpenAPI/openapi.yaml` (in `Generated/`) on
/// `PocketOpenAPITransport`, against the in-process test server.
final class OpenAPITransportTests: XCTestCase {
    private var server: TestServer!
    private var pocket: PocketClient!
    private var api: Client!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
        pocket = try makeIntegrationClient()
        api = Client(serverURL: URL(string: server.url("/api"))!, transport: PocketOpenAPITransport(client: pocket))
    }

    func testAJSONOperationRoundTrips() async throws {
        server.route("/api/greet") { request in
            let name = request.query?.split(separator: "=").last.map(String.init) ?? "nobody"
            return .response(headers: [("Content-Type", "application/json")], body: Array(#"{"message":"hello, \#(name)"}"#.utf8))
        }
        let output = try await api.getGreeting(query: .init(name: "pocket"))
        XCTAssertEqual(try output.ok.body.json.message, "hello, pocket")
        let seen = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(seen.target, "/api/greet?name=pocket")
        XCTAssertEqual(seen.header("Accept"), "application/json")
    }

    func testAnUndeclaredStatusReachesTheDefaultCase() async throws {
        server.route("/api/greet") { _ in
            .response(status: 418, headers: [("Content-Type", "application/json")], body: Array(#"{"reason":"teapot"}"#.utf8))
        }
        let output = try await api.getGreeting(query: .init())
        guard case .default(let status, let payload) = output else { return XCTFail("\(output)") }
        XCTAssertEqual(status, 418)
        XCTAssertEqual(try payload.body.json.reason, "teapot")
    }

    /// The size of the big bodies: 256 MiB (a few seconds for both tests;
    /// 32 MiB under a sanitizer), or `POCKET_BIG_BODY_MIB` MiB (1024 for the
    /// 1 GiB check of the README).
    private var bigBodySize: Int {
        (ProcessInfo.processInfo.environment["POCKET_BIG_BODY_MIB"].flatMap(Int.init) ?? (sanitizerMemoryFactor == 1 ? 256 : 32)) << 20
    }

    /// Asserts the RSS growth of a big body stays under 32 MiB (the whole
    /// body in memory would be 256). Not under a sanitizer: its shadow
    /// memory and quarantine grow with the bytes moved, and its runs use
    /// bodies too small to tell.
    private func assertBounded(_ grown: Int, _ what: String, size: Int, file: StaticString = #filePath, line: UInt = #line) {
        print("\(what) of \(size >> 20) MiB: RSS grew by \(grown >> 10) KiB")
        guard sanitizerMemoryFactor == 1 else { return }
        XCTAssertLessThan(grown, 32 << 20, "a \(size >> 20) MiB \(what) grew RSS by \(grown >> 20) MiB", file: file, line: line)
    }

    func testABigUploadStreamsWithBoundedMemory() async throws {
        let size = bigBodySize
        server.keepsRequestBodies = false
        server.route("/api/blobs/b1") { request in
            .response(headers: [("Content-Type", "application/json")],
                      body: Array(#"{"length":\#(request.bodyLength),"sha256":"\#(request.bodySHA256)"}"#.utf8))
        }
        let before = residentBytes()
        let body = HTTPBody(PatternChunks(seed: 3, size: size, chunk: 64 << 10), length: .known(Int64(size)),
                            iterationBehavior: .single)
        let output = try await api.putBlob(path: .init(id: "b1"), body: .binary(body))
        let receipt = try output.ok.body.json
        XCTAssertEqual(receipt.length, Int64(size))
        XCTAssertEqual(receipt.sha256, BytePattern.sha256(seed: 3, size: size))
        let grown = residentBytes() - before
        assertBounded(grown, "upload", size: size)
        let seen = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(seen.headerValues("Content-Length"), [String(size)])
        XCTAssertEqual(seen.header("Content-Type"), "application/octet-stream")
    }

    func testABigDownloadStreamsWithBoundedMemory() async throws {
        let size = bigBodySize
        server.route("/api/blobs/b2") { _ in .generated(size: size, seed: 4, headers: [("Content-Type", "application/octet-stream")]) }
        let before = residentBytes()
        let output = try await api.getBlob(path: .init(id: "b2"))
        let body = try output.ok.body.binary
        XCTAssertEqual(body.length, .known(Int64(size)))
        let hasher = SHA256Hasher()
        var count = 0
        for try await chunk in body {
            hasher.update(chunk)
            count += chunk.count
        }
        XCTAssertEqual(count, size)
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 4, size: size))
        let grown = residentBytes() - before
        assertBounded(grown, "download", size: size)
    }

    func testADecodedBodyHasNoWireLength() async throws {
        let text = String(repeating: "pocket ", count: 2000)
        let gzipped = try gzip(Data(text.utf8))
        server.route("/api/blobs/gz") { _ in
            .response(headers: [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")], body: Array(gzipped))
        }
        let body = try await api.getBlob(path: .init(id: "gz")).ok.body.binary
        XCTAssertEqual(body.length, .unknown, "Content-Length is \(gzipped.count), the decoded body \(text.utf8.count)")
        let bytes = try await ArraySlice<UInt8>(collecting: body, upTo: 1 << 20)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), text)
    }

    func testErrorsCarryPocketsCodes() async throws {
        let port = try closedPort()
        let refused = Client(serverURL: URL(string: "http://127.0.0.1:\(port)/api")!,
                             transport: PocketOpenAPITransport(client: pocket))
        do {
            _ = try await refused.getGreeting(query: .init())
            XCTFail("expected an error")
        } catch let error as ClientError {
            XCTAssertEqual(error.operationID, "getGreeting")
            XCTAssertEqual((error.underlyingError as? PocketError)?.code, .connectionRefused, "\(error.underlyingError)")
        }

        // A body cut short fails its iteration with Pocket's error, never a short body.
        server.route("/api/blobs/cut") { _ in
            .closeMidBody(headers: [("Content-Type", "application/octet-stream")], declaredLength: 100_000,
                          sentPrefix: Array(repeating: 7, count: 1000))
        }
        let body = try await api.getBlob(path: .init(id: "cut")).ok.body.binary
        await expectPocketError(.truncatedBody) {
            try await ArraySlice<UInt8>(collecting: body, upTo: 1 << 20)
        }
    }

    func testCancellingTheCallingTaskCancelsTheRequest() async throws {
        let arrived = CallCounter()
        server.route("/api/blobs/slow") { _ in
            _ = arrived.next()
            return .stall(milliseconds: 10_000)
        }
        let api = self.api!
        let task = Task { try await api.getBlob(path: .init(id: "slow")) }
        let hasArrived = await poll { arrived.count == 1 }
        XCTAssertTrue(hasArrived)
        let began = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected cancellation")
        } catch let error as ClientError {
            XCTAssertEqual((error.underlyingError as? PocketError)?.code, .cancelled, "\(error.underlyingError)")
        }
        XCTAssertLessThan(ContinuousClock.now - began, .seconds(2))
        XCTAssertTrue(server.waitUntil(timeout: 3) { $0.openConnections == 0 }, "the connection was closed")
    }

    func testASmallRepeatableBodyIsSentAgainOnRetry() async throws {
        let calls = CallCounter()
        server.route("/api/blobs/r") { request in
            if calls.next() == 1 { return .text("busy", status: 503) }
            return .response(headers: [("Content-Type", "application/json")],
                             body: Array(#"{"length":\#(request.body.count),"sha256":"\#(request.bodySHA256)"}"#.utf8))
        }
        let client = try makeIntegrationClient { $0.handling.retry = PocketRetryPolicy.fixed(maxAttempts: 2, interval: .zero) }
        let api = Client(serverURL: URL(string: server.url("/api"))!, transport: PocketOpenAPITransport(client: client))
        let output = try await api.putBlob(path: .init(id: "r"), body: .binary(HTTPBody("small and replayable")))
        XCTAssertEqual(try output.ok.body.json.length, 20)
        XCTAssertEqual(calls.count, 2)
        XCTAssertEqual(server.receivedRequests.map(\.bodyText), ["small and replayable", "small and replayable"])
    }
}

/// `size` bytes of `BytePattern` in chunks, generated as they are asked for.
struct PatternChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let seed: UInt64
    let size: Int
    let chunk: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: PatternChunks
        var offset = 0
        mutating func next() async -> ArraySlice<UInt8>? {
            guard offset < source.size else { return nil }
            let end = Swift.min(source.size, offset + source.chunk)
            defer { offset = end }
            return ArraySlice(BytePattern.bytes(seed: source.seed, range: offset..<end))
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self) }
}

/// `data` gzip-compressed by the system's gzip (as a server would send it).
func gzip(_ data: Data) throws -> Data {
    try ChildProcess.check("/usr/bin/gzip", ["-c", "-n"], input: data, timeout: 10)
}
