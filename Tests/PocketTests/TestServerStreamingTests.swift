#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PocketTestSupport
import XCTest

/// Tests of the test server's streaming aids (SHA-256, `BytePattern`,
/// generated replies, resources with ranges, body digests, early replies)
/// through plain sockets (`LoopbackRawClient`), without the Pocket client.
final class TestServerStreamingTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        let server = try TestServer()
        addTeardownBlock { server.shutdown() }
        self.server = server
    }

    // MARK: SHA-256 and the pattern

    func testSHA256KnownVectorsIncrementalAndFile() throws {
        XCTAssertEqual(SHA256Digest.hex([UInt8]()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256Digest.hex(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256Digest.hex("abc".utf8), SHA256Digest.hex(Array("abc".utf8)), "non-contiguous collections too")

        let message = BytePattern.bytes(seed: 5, range: 0..<100_003)
        let hasher = SHA256Hasher()
        hasher.update(Array(message[0..<7]))
        message[7..<50_000].withUnsafeBytes { hasher.update($0) }
        hasher.update(Array(message[50_000...]))
        XCTAssertEqual(hasher.finalizeHex(), SHA256Digest.hex(message))
        XCTAssertEqual(hasher.finalizeHex(), SHA256Digest.hex([UInt8]()), "finalizing restarts the hasher")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let large = BytePattern.bytes(seed: 9, range: 0..<(3 << 20) + 11)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(large)))
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: path), SHA256Digest.hex(large))
        XCTAssertThrowsError(try SHA256Digest.hex(fileAtPath: path + ".missing"))
    }

    func testBytePatternIsSplitMix64AtAnyOffsetAndIncompressible() {
        // The documented definition, computed independently.
        func splitMix(_ seed: UInt64, _ n: UInt64) -> UInt64 {
            var z = seed &+ (n &+ 1) &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let expected = (0..<64).map { i in UInt8(truncatingIfNeeded: splitMix(42, UInt64(i / 8)) >> (8 * UInt64(i % 8))) }
        XCTAssertEqual(BytePattern.bytes(seed: 42, range: 0..<64), expected)
        XCTAssertEqual(BytePattern.bytes(seed: 42, range: 13..<45), Array(expected[13..<45]))
        XCTAssertEqual(BytePattern.bytes(seed: 42, range: 5..<5), [])
        XCTAssertNotEqual(BytePattern.bytes(seed: 43, range: 0..<64), expected)

        let whole = BytePattern.bytes(seed: 1, range: 0..<(1 << 20))
        XCTAssertEqual(Set(whole).count, 256)
        let words = stride(from: 0, to: whole.count, by: 8).map { i in whole[i..<(i + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        XCTAssertEqual(Set(words).count, words.count, "no 8-byte block repeats in 1 MiB")
        var buffer = [UInt8](repeating: 0, count: 1000)
        buffer.withUnsafeMutableBytes { BytePattern.fill(seed: 1, offset: 777_777, into: $0) }
        XCTAssertEqual(buffer, Array(whole[777_777..<778_777]))

        let size = (3 << 20) + 5
        XCTAssertEqual(BytePattern.sha256(seed: 7, size: size), SHA256Digest.hex(BytePattern.bytes(seed: 7, range: 0..<size)))
        XCTAssertEqual(BytePattern.sha256(seed: 7, range: 100..<size),
                       SHA256Digest.hex(BytePattern.bytes(seed: 7, range: 100..<size)))
        let start = Date()
        _ = BytePattern.sha256(seed: 3, size: 256 << 20)
        XCTAssertLessThan(Date().timeIntervalSince(start), 2 * Double(sanitizerSlowdown), "256 MiB generated and hashed (1 GiB: a few seconds)")
    }

    // MARK: Generated replies

    func testGeneratedBodyOfEightMiBHashesToThePatternThenKeepsAlive() throws {
        let size = 8 << 20
        server.route("/big") { _ in .generated(size: size, seed: 11, headers: [("X-Kind", "pattern")]) }
        var reader = try ResponseReader(port: server.port)
        reader.socket.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try XCTUnwrap(reader.head())
        XCTAssertEqual(head, "HTTP/1.1 200 OK\r\nX-Kind: pattern\r\nContent-Length: \(size)\r\n\r\n")
        XCTAssertEqual(reader.body(length: size), BytePattern.sha256(seed: 11, size: size))

        reader.socket.send("HEAD /big HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(reader.head(), head, "HEAD: the same head, no body")
        reader.socket.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNotNil(reader.head())
        XCTAssertEqual(reader.body(length: size), BytePattern.sha256(seed: 11, size: size))
        XCTAssertEqual(server.acceptedConnections, 1)
    }

    func testGeneratedChunkedBodyHasOneChunkPerPiece() throws {
        let size = (1 << 20) + 3
        server.route("/c") { _ in .generated(size: size, seed: 2, chunked: true, pieceSize: 256 * 1024) }
        var reader = try ResponseReader(port: server.port)
        reader.socket.send("GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        let (sizes, digest) = try XCTUnwrap(reader.chunkedBody())
        XCTAssertEqual(sizes, [262_144, 262_144, 262_144, 262_144, 3])
        XCTAssertEqual(digest, BytePattern.sha256(seed: 2, size: size))
        XCTAssertEqual(reader.socket.receive(timeoutMilliseconds: 1000), .closed)
    }

    func testGeneratedBodyPacesItsPieces() throws {
        server.route("/slow") { _ in .generated(size: 4000, pieceSize: 1000, delayMillisecondsPerPiece: 100) }
        var reader = try ResponseReader(port: server.port)
        let start = Date()
        reader.socket.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNotNil(reader.head())
        XCTAssertEqual(reader.body(length: 4000), BytePattern.sha256(seed: 0, size: 4000))
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.28, "three pauses between four pieces")
    }

    func testGeneratedBodyOverTLSToCurl() throws {
        try requireTool(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed")
        let tlsServer = try TestServer(tls: .localhost())
        defer { tlsServer.shutdown() }
        let size = (8 << 20) + 1
        tlsServer.route("/big") { _ in .generated(size: size, seed: 4) }
        tlsServer.route("/chunked") { _ in .generated(size: size, seed: 4, chunked: true) }
        for path in ["/big", "/chunked"] {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: output) }
            let (curl, _) = try ChildProcess.run("/usr/bin/curl", [
                "-sS", "--fail", "--max-time", "20", "--cacert", try TestCertificates.shared.caCert,
                "-o", output, tlsServer.url(host: "localhost", path: path)])
            XCTAssertEqual(curl.status, 0, curl.stderrText)
            XCTAssertEqual(try SHA256Digest.hex(fileAtPath: output), BytePattern.sha256(seed: 4, size: size), path)
        }
    }

    func testAReaderThatStopsDoesNotMakeTheServerSpinAndShutdownStaysBounded() throws {
        server.route("/huge") { _ in .generated(size: 1 << 30) }
        var reader = try ResponseReader(port: server.port)
        reader.socket.send("GET /huge HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNotNil(reader.head())
        usleep(300_000) // the kernel buffers fill up
        let before = processCPUSeconds()
        usleep(500_000)
        XCTAssertLessThan(processCPUSeconds() - before, 0.25, "a blocked send waits, it does not spin")
        let start = Date()
        server.shutdown()
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.5)
    }

    // MARK: Resources

    private let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"

    func testResourceFullRangesAndUnsatisfiableHeads() throws {
        let size = 3 * 1024 * 1024 + 7
        server.routeResource("/f", .init(size: size, seed: 8, etag: "\"v1\"", lastModified: lastModified))
        let validators = "Content-Type: application/octet-stream\r\nETag: \"v1\"\r\nLast-Modified: \(lastModified)\r\n"
            + "Accept-Ranges: bytes\r\n"
        var reader = try ResponseReader(port: server.port)

        reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 200 OK\r\n\(validators)Content-Length: \(size)\r\n\r\n")
        XCTAssertEqual(reader.body(length: size), server.resource("/f")?.sha256)

        reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: bytes=1000000-\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 206 Partial Content\r\n\(validators)"
                       + "Content-Range: bytes 1000000-\(size - 1)/\(size)\r\nContent-Length: \(size - 1_000_000)\r\n\r\n")
        XCTAssertEqual(reader.body(length: size - 1_000_000), BytePattern.sha256(seed: 8, range: 1_000_000..<size))

        reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: bytes=10-19\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 206 Partial Content\r\n\(validators)"
                       + "Content-Range: bytes 10-19/\(size)\r\nContent-Length: 10\r\n\r\n")
        XCTAssertEqual(reader.bytes(10), BytePattern.bytes(seed: 8, range: 10..<20))

        reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: bytes=-5\r\n\r\n")
        XCTAssertTrue(reader.head()?.contains("Content-Range: bytes \(size - 5)-\(size - 1)/\(size)\r\n") == true)
        XCTAssertEqual(reader.bytes(5), BytePattern.bytes(seed: 8, range: (size - 5)..<size))

        for unsatisfiable in ["bytes=\(size)-", "bytes=\(size + 10)-\(size + 20)"] {
            reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: \(unsatisfiable)\r\n\r\n")
            XCTAssertEqual(reader.head(), "HTTP/1.1 416 Range Not Satisfiable\r\n\(validators)"
                           + "Content-Range: bytes */\(size)\r\nContent-Length: 0\r\n\r\n")
        }
        for ignored in ["bytes=5-2", "bytes=0-1,4-5", "items=0-1", "bytes=x-"] {
            reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: \(ignored)\r\n\r\n")
            XCTAssertTrue(reader.head()?.hasPrefix("HTTP/1.1 200 OK\r\n") == true, ignored)
            XCTAssertNotNil(reader.body(length: size))
        }
        reader.socket.send("HEAD /f HTTP/1.1\r\nHost: x\r\nRange: bytes=5-\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 200 OK\r\n\(validators)Content-Length: \(size)\r\n\r\n")
        reader.socket.send("DELETE /f HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(reader.head()?.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n") == true)
        XCTAssertEqual(server.requestCount, 12)
        XCTAssertEqual(server.acceptedConnections, 1)
    }

    func testIfRangeHonorsOnlyTheCurrentStrongValidator() throws {
        server.routeResource("/f", .init(size: 100, etag: "\"v1\"", lastModified: lastModified))
        var reader = try ResponseReader(port: server.port)
        func status(ifRange: String) -> String? {
            reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: bytes=40-\r\nIf-Range: \(ifRange)\r\n\r\n")
            guard let head = reader.head(), let length = contentLength(head) else { return nil }
            _ = reader.bytes(length)
            return String(head.dropFirst("HTTP/1.1 ".count).prefix(3))
        }
        XCTAssertEqual(status(ifRange: "\"v1\""), "206")
        XCTAssertEqual(status(ifRange: lastModified), "206")
        XCTAssertEqual(status(ifRange: "\"v0\""), "200")
        XCTAssertEqual(status(ifRange: "W/\"v1\""), "200")
        XCTAssertEqual(status(ifRange: "Mon, 07 Nov 1994 08:49:37 GMT"), "200")

        server.updateResource("/f") { $0.etag = "\"v2\"" }
        XCTAssertEqual(status(ifRange: "\"v1\""), "200", "the resource changed")
        XCTAssertEqual(status(ifRange: "\"v2\""), "206")
        server.updateResource("/f") { $0.etag = "W/\"v3\"" }
        XCTAssertEqual(status(ifRange: "W/\"v3\""), "200", "a weak tag never matches")

        server.updateResource("/f") { $0.honorsRange = false }
        reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\nRange: bytes=40-\r\n\r\n")
        let head = try XCTUnwrap(reader.head())
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        XCTAssertFalse(head.contains("Accept-Ranges"), head)
        XCTAssertEqual(reader.bytes(100), BytePattern.bytes(seed: 0, range: 0..<100))
    }

    func testInterruptedDownloadResumesWithRangeAndIfRange() throws {
        let size = 2 * 1024 * 1024
        server.routeResource("/f", .init(size: size, seed: 3, etag: "\"e\"", stopAfter: 700_000, interruptions: 2,
                                         pieceSize: 64 * 1024))
        let hasher = SHA256Hasher()
        var received = 0
        for (attempt, expectedStatus) in ["200", "206", "206"].enumerated() {
            var reader = try ResponseReader(port: server.port)
            let range = received == 0 ? "" : "Range: bytes=\(received)-\r\nIf-Range: \"e\"\r\n"
            reader.socket.send("GET /f HTTP/1.1\r\nHost: x\r\n\(range)\r\n")
            let head = try XCTUnwrap(reader.head())
            XCTAssertTrue(head.hasPrefix("HTTP/1.1 \(expectedStatus) "), head)
            XCTAssertFalse(head.contains("Connection: close"), "a cut comes unannounced")
            let bytes: [UInt8]
            if attempt < 2 {
                let error: Int32?
                (bytes, error) = reader.readToEOF(timeoutMilliseconds: 500)
                XCTAssertNil(error, "a clean FIN")
            } else {
                bytes = try XCTUnwrap(reader.bytes(try XCTUnwrap(contentLength(head))))
            }
            bytes.withUnsafeBytes { hasher.update($0) }
            received += bytes.count
        }
        XCTAssertEqual(received, size, "700000 + 700000 + the rest")
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 3, size: size))
        XCTAssertNil(server.resource("/f")?.stopAfter, "stopAfter clears itself after the last interruption")
        XCTAssertEqual(server.resource("/f")?.interruptions, 0)
        XCTAssertEqual(server.receivedRequests.map { $0.header("Range") }, [nil, "bytes=700000-", "bytes=1400000-"])
    }

    // MARK: Request bodies

    func testRequestBodiesAreCountedAndHashedWithOrWithoutKeepingThem() throws {
        server.route("/up") { request in .text("\(request.bodyLength)") }
        let payload = String(decoding: BytePattern.bytes(seed: 6, range: 0..<(3 << 20)).map { 33 + $0 % 94 }, as: UTF8.self)
        let digest = SHA256Digest.hex(Array(payload.utf8))
        let chunks = [String(payload.prefix(100_000)), String(payload.dropFirst(100_000))]
        let chunked = chunks.map { String($0.utf8.count, radix: 16) + "\r\n" + $0 + "\r\n" }.joined() + "0\r\nX-T: 1\r\n\r\n"
        var reader = try ResponseReader(port: server.port)
        for keep in [true, false] {
            server.keepsRequestBodies = keep
            reader.socket.send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: \(payload.utf8.count)\r\n\r\n" + payload)
            XCTAssertNotNil(reader.head())
            XCTAssertEqual(reader.bytes(7), Array("3145728".utf8))
            reader.socket.send("PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
            XCTAssertNotNil(reader.head())
            XCTAssertEqual(reader.bytes(7), Array("3145728".utf8))
        }
        reader.socket.send("GET /up HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNotNil(reader.head())

        let requests = server.receivedRequests
        XCTAssertEqual(requests.count, 5)
        XCTAssertEqual(requests[0..<4].map(\.bodyLength), [3 << 20, 3 << 20, 3 << 20, 3 << 20])
        XCTAssertEqual(requests[0..<4].map(\.bodySHA256), [digest, digest, digest, digest])
        XCTAssertEqual(requests[0..<2].map(\.body), [Array(payload.utf8), Array(payload.utf8)])
        XCTAssertEqual(requests[2..<4].map(\.body), [[], []], "not kept")
        XCTAssertEqual(requests[3].trailers.first?.0, "X-T")
        XCTAssertEqual(requests[4].bodyLength, 0)
        XCTAssertEqual(requests[4].bodySHA256, SHA256Digest.hex([UInt8]()))
        XCTAssertFalse(requests.contains(where: \.answeredBeforeBody))
    }

    func testExpectContinueIsRecordedAndSendsContinueStillWorks() throws {
        server.route("/up") { request in .text(request.bodySHA256) }
        var reader = try ResponseReader(port: server.port)
        reader.socket.send("PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 100 Continue\r\n\r\n")
        reader.socket.send("abc")
        XCTAssertNotNil(reader.head())
        XCTAssertEqual(reader.bytes(64), Array(SHA256Digest.hex(Array("abc".utf8)).utf8))

        server.sendsContinue = false
        reader.socket.send("PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        XCTAssertEqual(reader.socket.receive(timeoutMilliseconds: 300), .timedOut, "no interim response")
        reader.socket.send("xyz")
        XCTAssertTrue(reader.head()?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
        XCTAssertEqual(reader.bytes(64), Array(SHA256Digest.hex(Array("xyz".utf8)).utf8))
        XCTAssertEqual(server.receivedRequests.map { $0.header("expect") }, ["100-continue", "100-continue"])
    }

    // MARK: Early replies

    func testEarlyReplyComesBeforeTheBodyWithoutContinueAndClosesGracefully() throws {
        server.route("/upload", respondsBeforeBody: true) { _ in .text("too large", status: 413) }
        var reader = try ResponseReader(port: server.port)
        reader.socket.send("PUT /upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10485760\r\n\r\n")
        XCTAssertEqual(reader.head(), "HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
                       + "Content-Length: 9\r\nConnection: close\r\n\r\n", "the final answer, no 100 Continue")
        XCTAssertEqual(reader.bytes(9), Array("too large".utf8))
        // The client keeps uploading for a while; the server drains it, so the
        // end is a clean FIN, not a reset.
        reader.socket.send(String(repeating: "x", count: 1 << 20))
        let (rest, error) = reader.readToEOF(timeoutMilliseconds: 3000)
        XCTAssertEqual(rest, [])
        XCTAssertNil(error)

        let request = try XCTUnwrap(server.receivedRequests.first)
        XCTAssertTrue(request.answeredBeforeBody)
        XCTAssertEqual(request.header("Expect"), "100-continue")
        XCTAssertEqual(request.bodyLength, 0)
        XCTAssertEqual(request.body, [])
    }

    func testEarlyReplyWhileTheClientIsStillSending() throws {
        server.route("/upload", respondsBeforeBody: true) { _ in .response(status: 413) }
        var reader = try ResponseReader(port: server.port)
        reader.socket.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n"
                           + String(repeating: "y", count: 64 * 1024))
        XCTAssertEqual(reader.head(), "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        reader.socket.send(String(repeating: "y", count: 2 << 20))
        let (rest, error) = reader.readToEOF(timeoutMilliseconds: 3000)
        XCTAssertEqual(rest, [])
        XCTAssertNil(error)
        XCTAssertEqual(server.requestCount, 1)
        XCTAssertTrue(server.waitUntil { $0.openConnections == 0 })
    }
}

/// Reads responses off a `LoopbackRawClient`, hashing large bodies as they
/// arrive instead of collecting them.
private struct ResponseReader {
    let socket: LoopbackRawClient
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        socket = try LoopbackRawClient(port: port)
    }

    /// Receives more bytes into the buffer; false on EOF, error or 5 s of silence.
    private mutating func fill(timeoutMilliseconds: Int = 5000) -> Bool {
        guard case let .data(more) = socket.receive(timeoutMilliseconds: timeoutMilliseconds) else { return false }
        buffer += more
        return true
    }

    /// The next head through its empty line.
    mutating func head() -> String? {
        while true {
            if let range = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                defer { buffer.removeFirst(range.upperBound) }
                return String(decoding: buffer[..<range.upperBound], as: UTF8.self)
            }
            guard fill() else { return nil }
        }
    }

    /// The next `count` bytes, or nil if the connection ended first.
    mutating func bytes(_ count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard fill() else { return nil }
        }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }

    /// The SHA-256 of the next `length` bytes, or nil if the connection ended first.
    mutating func body(length: Int) -> String? {
        let hasher = SHA256Hasher()
        return hash(length, into: hasher) ? hasher.finalizeHex() : nil
    }

    /// Feeds the next `length` bytes to `hasher`; false if the connection ended first.
    private mutating func hash(_ length: Int, into hasher: SHA256Hasher) -> Bool {
        var left = length
        while left > 0 {
            if buffer.isEmpty { guard fill() else { return false } }
            let take = min(left, buffer.count)
            buffer[..<take].withUnsafeBytes { hasher.update($0) }
            buffer.removeFirst(take)
            left -= take
        }
        return true
    }

    /// A chunked body: the chunk sizes and the digest of the data.
    mutating func chunkedBody() -> (sizes: [Int], digest: String)? {
        let hasher = SHA256Hasher()
        var sizes: [Int] = []
        while true {
            while buffer.firstRange(of: [13, 10]) == nil {
                guard fill() else { return nil }
            }
            let end = buffer.firstRange(of: [13, 10])!
            guard let size = Int(String(decoding: buffer[..<end.lowerBound], as: UTF8.self), radix: 16) else { return nil }
            buffer.removeFirst(end.upperBound)
            if size == 0 {
                guard bytes(2) == [13, 10] else { return nil }
                return (sizes, hasher.finalizeHex())
            }
            sizes.append(size)
            guard hash(size, into: hasher), bytes(2) == [13, 10] else { return nil }
        }
    }

    /// Everything up to EOF: the bytes and the errno of a failure (nil: clean EOF).
    mutating func readToEOF(timeoutMilliseconds: Int) -> ([UInt8], Int32?) {
        while true {
            switch socket.receive(timeoutMilliseconds: timeoutMilliseconds) {
            case let .data(more): buffer += more
            case .closed: return (buffer, nil)
            case let .failed(code): return (buffer, code)
            case .timedOut: return (buffer, ETIMEDOUT)
            }
        }
    }
}

/// The value of the `Content-Length` field in `head`, if any.
private func contentLength(_ head: String) -> Int? {
    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
}

/// User plus system CPU time of this process so far.
private func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}
