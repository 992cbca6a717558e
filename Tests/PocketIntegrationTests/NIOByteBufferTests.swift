import Foundation
@_spi(CustomByteBufferAllocator) import NIOCore
import Synchronization
import XCTest
import Pocket
import PocketNIO
import PocketTestSupport

/// What the counting allocator did: every allocation, growth and storage
/// copy of the `ByteBuffer`s made from it.
private let allocations = Atomic<Int>(0)
private let reallocations = Atomic<Int>(0)
private let storageCopies = Atomic<Int>(0)

private func countedAllocate(_ size: Int) -> UnsafeMutableRawPointer? {
    allocations.add(1, ordering: .relaxed)
    return malloc(size)
}
private func countedReallocate(_ pointer: UnsafeMutableRawPointer?, _ old: Int, _ new: Int) -> UnsafeMutableRawPointer? {
    reallocations.add(1, ordering: .relaxed)
    return realloc(pointer, new)
}
private func countedFree(_ pointer: UnsafeMutableRawPointer) { free(pointer) }
private func countedCopy(_ destination: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ count: Int) {
    storageCopies.add(1, ordering: .relaxed)
    destination.copyMemory(from: source, byteCount: count)
}

/// Counts what the buffers from it cost.
private struct CountingAllocator {
    let allocator = ByteBufferAllocator(allocate: { countedAllocate($0) }, reallocate: { countedReallocate($0, $1, $2) },
                                        deallocate: { countedFree($0) }, copy: { countedCopy($0, $1, $2) })
    init() {
        allocations.store(0, ordering: .relaxed)
        reallocations.store(0, ordering: .relaxed)
        storageCopies.store(0, ordering: .relaxed)
    }
    var allocated: Int { allocations.load(ordering: .relaxed) }
    var reallocated: Int { reallocations.load(ordering: .relaxed) }
    var copied: Int { storageCopies.load(ordering: .relaxed) }
}

/// A core sink counting what it is given, to check each byte arrives once.
/// Unchecked: written on the loop thread, read after the send returned.
private final class CountingSink: PocketResponseBodySink, @unchecked Sendable {
    let head: PocketResponseHead
    let declared: Int?
    var bytes = 0
    var writes = 0
    let hasher = SHA256Hasher()
    var finished: [PocketError?] = []
    init(_ start: PocketResponseBodyStart) {
        head = start.head
        declared = start.contentLength
    }
    func write(_ bytes: UnsafeRawBufferPointer) -> PocketBodyWriteAnswer {
        self.bytes += bytes.count
        writes += 1
        hasher.update(bytes)
        return .proceed
    }
    func finish(_ error: PocketError?, timings: PocketTimings?) { finished.append(error) }
}

/// Response bodies as NIO `ByteBuffer`s (PocketNIO), through real sockets:
/// the bytes are right, and each is written once into the caller's storage.
final class NIOByteBufferTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    private func request(_ path: String) -> PocketRequest { PocketRequest(url: URL(string: server.url(path))!) }

    func testAContentLengthBodyIsOneAllocationWrittenOnce() async throws {
        let size = 8 << 20
        server.route("/big") { _ in .generated(size: size, seed: 11, headers: [("Content-Type", "application/octet-stream")]) }
        let client = try makeIntegrationClient()
        let counting = CountingAllocator()
        let (response, body) = try await client.send(request("/big"), into: counting.allocator)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["Content-Type"], "application/octet-stream")
        XCTAssertTrue(response.body.isEmpty, "the body is the buffer, not Data")
        XCTAssertEqual(body.readableBytes, size)
        let hasher = SHA256Hasher()
        body.withUnsafeReadableBytes { hasher.update($0) }
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 11, size: size))
        XCTAssertEqual(counting.allocated, 1, "the declared length reserved once")
        XCTAssertEqual(counting.reallocated, 0, "never grown")
        XCTAssertEqual(counting.copied, 0, "never copied as a whole")
        XCTAssertEqual(body.capacity, size)
    }

    func testEachBodyByteReachesTheSinkOnce() async throws {
        let size = 8 << 20
        server.route("/big") { _ in .generated(size: size, seed: 12) }
        let client = try makeIntegrationClient()
        let (response, sink) = try await client.send(request("/big")) { CountingSink($0) }
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(sink.declared, size)
        XCTAssertEqual(sink.bytes, size, "each byte written once")
        XCTAssertGreaterThan(sink.writes, 1)
        XCTAssertEqual(sink.hasher.finalizeHex(), BytePattern.sha256(seed: 12, size: size))
        XCTAssertEqual(sink.finished.count, 1)
        XCTAssertNil(sink.finished.first ?? nil)
    }

    func testAChunkedBodyGrowsItsBufferButIsNeverCopied() async throws {
        let size = 3 << 20 | 5
        server.route("/chunked") { _ in .generated(size: size, seed: 13, chunked: true, pieceSize: 100_000) }
        let client = try makeIntegrationClient()
        let counting = CountingAllocator()
        let (response, body) = try await client.send(request("/chunked"), into: counting.allocator)
        XCTAssertEqual(response.headers["Transfer-Encoding"], "chunked")
        XCTAssertEqual(body.readableBytes, size)
        let hasher = SHA256Hasher()
        body.withUnsafeReadableBytes { hasher.update($0) }
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 13, size: size))
        XCTAssertEqual(counting.allocated, 1)
        XCTAssertEqual(counting.copied, 0)
        XCTAssertLessThanOrEqual(counting.reallocated, 12, "grown by doubling from the first delivery: \(counting.reallocated)")
    }

    func testGzipBodiesArriveDecoded() async throws {
        // A small one (decoded whole) and a large one (decoded as it streams).
        let small = Data(String(repeating: "pocket ", count: 2000).utf8)
        let large = Data((0..<40_000).map { "line \($0) of a log that compresses well\n" }.joined().utf8)
        for (name, text) in [("small", small), ("large", large)] {
            let gzipped = try gzip(text)
            server.route("/gz-\(name)") { _ in
                .response(headers: [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], body: Array(gzipped))
            }
            let client = try makeIntegrationClient()
            let counting = CountingAllocator()
            let (response, body) = try await client.send(request("/gz-\(name)"), into: counting.allocator)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(Data(body.readableBytesView), text, name)
            XCTAssertEqual(counting.allocated, 1, name)
            XCTAssertEqual(counting.copied, 0, name)
            XCTAssertEqual(server.receivedRequests.last?.header("Accept-Encoding")?.contains("gzip"), true)
        }
    }

    func testEmptyBodiesAllocateNothing() async throws {
        server.route("/none") { _ in .response(status: 204) }
        server.route("/zero") { _ in .response(headers: [("Content-Length", "0")]) }
        server.route("/empty-chunked") { _ in .chunked(chunks: []) }
        let client = try makeIntegrationClient()
        for path in ["/none", "/zero", "/empty-chunked"] {
            let counting = CountingAllocator()
            let (response, body) = try await client.send(request(path), into: counting.allocator)
            XCTAssertEqual(response.status, path == "/none" ? 204 : 200, path)
            XCTAssertEqual(body.readableBytes, 0, path)
            XCTAssertEqual(counting.allocated, 0, path)
        }
        var head = request("/zero")
        head.method = .head
        let (response, body) = try await client.send(head, into: ByteBufferAllocator())
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(body.readableBytes, 0)
    }

    func testARedirectedSendReturnsTheFinalBodysSink() async throws {
        server.route("/old") { _ in .response(status: 302, headers: [("Location", "/new")], body: Array("moved".utf8)) }
        server.route("/new") { _ in .text("here") }
        let client = try makeIntegrationClient()
        let made = Lock<[CountingSink]>([])
        let (response, sink) = try await client.send(request("/old")) { start in
            let sink = CountingSink(start)
            made.withLock { $0.append(sink) }
            return sink
        }
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.url?.path, "/new")
        XCTAssertEqual(sink.head.status, 200)
        XCTAssertEqual(sink.bytes, 4)
        let sinks = made.withLock { $0 }
        XCTAssertEqual(sinks.map(\.head.status), [302, 200], "one sink per head")
        XCTAssertEqual(sinks.first?.bytes, 5)
    }

    /// The sink path's two routes: one engine request with the redirect
    /// machinery only after a 3xx it follows (no transport, cookie store or
    /// proxy), and the general one (here: a cookie store).
    func testRedirectsOffAndThroughACookieStoreKeepTheRightSink() async throws {
        server.route("/old") { _ in
            .response(status: 302, headers: [("Location", "/new"), ("Set-Cookie", "hop=1")], body: Array("moved".utf8))
        }
        server.route("/new") { request in .text(request.headerValues("Cookie").joined(separator: ";")) }
        let direct = try makeIntegrationClient()
        var unfollowed = request("/old")
        unfollowed.redirects = .disabled
        let (stopped, stoppedBody) = try await direct.send(unfollowed, into: ByteBufferAllocator())
        XCTAssertEqual(stopped.status, 302, "a 3xx not followed is the answer")
        XCTAssertEqual(String(buffer: stoppedBody), "moved")
        XCTAssertEqual(stopped.url?.path, "/old")
        XCTAssertEqual(stopped.redirects.count, 0)

        let withCookies = try makeIntegrationClient { $0.cookies = PocketCookieStore(treatsLoopbackAsSecure: true) }
        let (followed, followedBody) = try await withCookies.send(request("/old"), into: ByteBufferAllocator())
        XCTAssertEqual(followed.status, 200)
        XCTAssertEqual(followed.url?.path, "/new")
        XCTAssertEqual(followed.redirects.map(\.status), [302])
        XCTAssertEqual(String(buffer: followedBody), "hop=1", "the hop went through the cookie store")
    }

    /// The sink path's own shortcut (no middleware, retry policy or
    /// listener): validation still applies, and the response records where
    /// it came from and the request sent.
    func testTheShortcutValidatesAndRecordsTheResponse() async throws {
        server.route("/missing") { _ in .text("no such thing", status: 404) }
        server.route("/here") { _ in .text("here") }
        let client = try makeIntegrationClient()
        var strict = request("/missing")
        strict.validation = .status([200..<300])
        let made = Lock<CountingSink?>(nil)
        await expectPocketError(.unacceptableStatus) {
            try await client.send(strict) { start in
                let sink = CountingSink(start)
                made.withLock { $0 = sink }
                return sink
            }
        }
        let failed = try XCTUnwrap(made.withLock { $0 })
        XCTAssertEqual(failed.head.status, 404)
        XCTAssertEqual(failed.bytes, 13, "the error's body reached its sink")
        XCTAssertEqual(failed.finished.count, 1)
        var lenient = request("/missing")
        lenient.validation = .status([200..<500])
        let (notFound, body) = try await client.send(lenient, into: ByteBufferAllocator())
        XCTAssertEqual(notFound.status, 404)
        XCTAssertEqual(String(buffer: body), "no such thing")
        let (response, sink) = try await client.send(request("/here")) { CountingSink($0) }
        XCTAssertEqual(response.url?.path, "/here")
        XCTAssertEqual(response.redirects.count, 0)
        XCTAssertEqual(response.request?.url.path, "/here", "the request as sent is kept")
        XCTAssertEqual(sink.bytes, 4)
    }

    func testARetriedAttemptGetsAFreshBuffer() async throws {
        let calls = Lock(0)
        server.route("/flaky") { _ in
            let n = calls.withLock { $0 += 1; return $0 }
            return n == 1 ? .text("busy, try again", status: 503) : .text("ok")
        }
        let client = try makeIntegrationClient { $0.handling.retry = PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero)) }
        let (response, body) = try await client.send(request("/flaky"), into: ByteBufferAllocator())
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(String(buffer: body), "ok")
    }

    func testATruncatedBodyThrowsAndFinishesItsSink() async throws {
        server.route("/cut") { _ in .closeMidBody(declaredLength: 1000, sentPrefix: Array(repeating: 65, count: 100)) }
        let client = try makeIntegrationClient()
        let made = Lock<CountingSink?>(nil)
        await expectPocketError(.truncatedBody) {
            try await client.send(self.request("/cut")) { start in
                let sink = CountingSink(start)
                made.withLock { $0 = sink }
                return sink
            }
        }
        let sink = try XCTUnwrap(made.withLock { $0 })
        XCTAssertEqual(sink.finished.count, 1)
        XCTAssertEqual(sink.finished.first??.code, .truncatedBody)
        await expectPocketError(.truncatedBody) { try await client.send(self.request("/cut"), into: ByteBufferAllocator()) }
    }

    func testAStreamYieldsBuffersWrittenOnceWithBackpressure() async throws {
        let size = 8 << 20
        server.route("/big") { _ in .generated(size: size, seed: 14) }
        let client = try makeIntegrationClient()
        let counting = CountingAllocator()
        let (response, body) = try await client.stream(request("/big"), into: counting.allocator, bufferSize: 64 << 10)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["Content-Length"], String(size))
        let hasher = SHA256Hasher()
        var count = 0, buffers = 0
        for try await buffer in body {
            buffer.withUnsafeReadableBytes { hasher.update($0) }
            count += buffer.readableBytes
            buffers += 1
            if buffers == 1 { try await Task.sleep(for: .milliseconds(200)) } // the engine pauses meanwhile
        }
        XCTAssertEqual(count, size)
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 14, size: size))
        XCTAssertEqual(counting.allocated, buffers, "one buffer per delivery")
        XCTAssertEqual(counting.reallocated, 0)
        XCTAssertEqual(counting.copied, 0)
        XCTAssertNotNil(body.timings)
    }

    func testStreamedChunkedGzipAndEmptyBodies() async throws {
        let text = Data((0..<20_000).map { "row \($0)\n" }.joined().utf8)
        let gzipped = try gzip(text)
        server.route("/gz") { _ in .chunked(headers: [("Content-Encoding", "gzip")], chunks: [Array(gzipped.prefix(1000)), Array(gzipped.dropFirst(1000))]) }
        server.route("/none") { _ in .response(status: 204) }
        let client = try makeIntegrationClient()
        let (_, gz) = try await client.stream(request("/gz"), into: ByteBufferAllocator())
        let all = try await gz.collect(upTo: 10 << 20)
        XCTAssertEqual(Data(all.readableBytesView), text)
        let (none, empty) = try await client.stream(request("/none"), into: ByteBufferAllocator())
        XCTAssertEqual(none.status, 204)
        var buffers = 0
        for try await _ in empty { buffers += 1 }
        XCTAssertEqual(buffers, 0)
    }

    func testAStreamEndsWithTheErrorOfATruncatedBody() async throws {
        server.route("/cut") { _ in .closeMidBody(declaredLength: 1000, sentPrefix: Array(repeating: 66, count: 100)) }
        let client = try makeIntegrationClient()
        let (response, body) = try await client.stream(request("/cut"), into: ByteBufferAllocator())
        XCTAssertEqual(response.status, 200)
        await expectPocketError(.truncatedBody) { try await body.collect(upTo: 1 << 20) }
    }

    func testDroppingAStreamCancelsTheTransfer() async throws {
        server.route("/endless") { _ in .generated(size: 1 << 30, seed: 15) }
        server.route("/after") { _ in .text("still works") }
        let client = try makeIntegrationClient()
        do {
            let (_, body) = try await client.stream(request("/endless"), into: ByteBufferAllocator(), bufferSize: 32 << 10)
            var iterator = body.makeAsyncIterator()
            let first = try await iterator.next()
            XCTAssertNotNil(first)
        }
        // The 1 GiB body was abandoned: its connection closes, and the client goes on.
        let deadline = ContinuousClock.now + .seconds(10)
        while server.openConnections > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        XCTAssertEqual(server.openConnections, 0, "the abandoned transfer's connection is closed")
        let (after, body) = try await client.send(request("/after"), into: ByteBufferAllocator())
        XCTAssertEqual(after.status, 200)
        XCTAssertEqual(String(buffer: body), "still works")
    }
}
