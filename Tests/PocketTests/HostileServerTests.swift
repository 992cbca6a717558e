import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Hostile servers, each through the in-process test server: every one must
/// end its request in its own error within its timeout and with bounded
/// memory, while other requests on the same client (the same origin and
/// pool where possible) keep succeeding during and after it. Single failure
/// modes are covered elsewhere (TimeoutTests, FramingTests, BombTests,
/// TLSTests); these tests are about surviving them.
final class HostileServerTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
        server.route("/ok") { _ in .text("fine") }
    }

    override func tearDown() {
        server.shutdown()
        server = nil
    }

    /// Runs `hostile` while good requests go to `good` on the same client,
    /// then checks: the hostile request failed with `code`, within `bound`;
    /// every good request (during and after) succeeded; resident memory grew
    /// by less than `maxGrowth`.
    @discardableResult
    private func assertSurvives(
        _ code: PocketError.Code,
        client: PocketClient,
        good: [URL]? = nil,
        bound: Duration = .seconds(20),
        maxGrowth: Int = 24 << 20,
        file: StaticString = #filePath, line: UInt = #line,
        _ hostile: @escaping @Sendable () async throws -> Void
    ) async throws -> PocketError? {
        let good = good ?? [url(server, "/ok")]
        for u in good { _ = try await client.send(PocketRequest(url: u)) } // pools and TLS contexts warm
        let before = residentBytes()
        let start = ContinuousClock.now
        let attack = Task { () -> (any Error)? in
            do { try await hostile(); return nil } catch { return error }
        }
        // Bounded: about a second of good traffic alongside the attack.
        for i in 0..<20 {
            let r = try await client.send(PocketRequest(url: good[i % good.count]))
            XCTAssertEqual(r.status, 200, "a good request during the attack", file: file, line: line)
            try await Task.sleep(for: .milliseconds(50))
        }
        let error = await attack.value
        let took = ContinuousClock.now - start
        let pocketError = error as? PocketError
        XCTAssertEqual(pocketError?.code, code, "\(String(describing: error))", file: file, line: line)
        XCTAssertLessThan(took, bound, "ended by its limit, not hung", file: file, line: line)
        for u in good {
            let r = try await client.send(PocketRequest(url: u))
            XCTAssertEqual(r.status, 200, "a good request after the attack", file: file, line: line)
        }
        let growth = residentBytes() - before
        XCTAssertLessThan(growth, maxGrowth, "resident memory stayed bounded", file: file, line: line)
        return pocketError
    }

    private func request(_ path: String, read: Duration = .seconds(10), total: Duration? = .seconds(20)) -> PocketRequest {
        var r = PocketRequest(url: url(server, path))
        r.timeouts = PocketTimeouts(connect: .seconds(5), read: read, total: total)
        return r
    }

    // MARK: - slow and silent servers

    func testHeadOneBytePerSecondHitsTheReadTimeout() async throws {
        server.route("/slow") { _ in .headTrickle(delayMilliseconds: 1000) }
        let client = try makeClient()
        let slow = request("/slow", read: .milliseconds(400))
        try await assertSurvives(.readTimeout, client: client) { _ = try await client.send(slow) }
    }

    func testHeadOneBytePerSecondHitsTheTotalDeadline() async throws {
        // Each byte resets the idle-read timer; only the total deadline can end it.
        server.route("/slow") { _ in .headTrickle(delayMilliseconds: 1000) }
        let client = try makeClient()
        let slow = request("/slow", read: .seconds(5), total: .milliseconds(2500))
        try await assertSurvives(.totalTimeout, client: client) { _ = try await client.send(slow) }
    }

    func testChunkedBodyThatNeverEndsHitsTheTotalDeadline() async throws {
        // Tens of MB/s: far more in two seconds than the memory bound below.
        server.route("/endless") { _ in .endlessChunked(pieceSize: 64 << 10, delayMilliseconds: 1) }
        let client = try makeClient()
        let endless = request("/endless", read: .seconds(5), total: .seconds(2))
        // Streamed and dropped: the deadline, not memory, is what ends it.
        try await assertSurvives(.totalTimeout, client: client) {
            let response = try await client.stream(endless)
            try await response.body.discard()
        }
        // Collected: the body limit ends it first, whatever the deadline. The
        // 4 MiB it legitimately holds (and the copies of a growing buffer)
        // count against the bound.
        let limited = try makeClient { $0.limits.maxBodyBytes = 4 << 20 }
        let collected = request("/endless", read: .seconds(5), total: .seconds(30))
        try await assertSurvives(.bodyTooLarge, client: limited, maxGrowth: 40 << 20) {
            _ = try await limited.send(collected)
        }
    }

    func testServerThatAcceptsAndNeverAnswers() async throws {
        server.route("/silent") { _ in .stall(milliseconds: 30_000) }
        let client = try makeClient()
        let silent = request("/silent", read: .milliseconds(500))
        try await assertSurvives(.readTimeout, client: client) { _ = try await client.send(silent) }
    }

    // MARK: - broken connections and answers

    func testResetMidBody() async throws {
        server.route("/reset") { _ in .resetMidBody() }
        let client = try makeClient()
        let reset = request("/reset")
        try await assertSurvives(.connectionReset, client: client) { _ = try await client.send(reset) }
    }

    func testEarly413WhileUploadingIsTheResponse() async throws {
        server.route("/upload", respondsBeforeBody: true) { _ in .text("too large", status: 413) }
        let client = try makeClient()
        var upload = request("/upload")
        upload.method = .post
        upload.body = .stream(ZeroChunks(total: 256 << 20, chunk: 64 << 10), length: nil)
        let before = residentBytes()
        let attack = Task { try await client.send(upload) }
        for _ in 0..<10 {
            let r = try await client.send(PocketRequest(url: url(server, "/ok")))
            XCTAssertEqual(r.text, "fine")
        }
        let r = try await attack.value
        XCTAssertEqual(r.status, 413, "the server's answer, not a write error")
        XCTAssertEqual(r.text, "too large")
        XCTAssertLessThan(r.timings.bytesSent, 256 << 20, "the upload stopped early")
        let after = try await client.send(PocketRequest(url: url(server, "/ok")))
        XCTAssertEqual(after.text, "fine")
        XCTAssertLessThan(residentBytes() - before, 24 << 20)
    }

    func testGzipBomb() async throws {
        server.route("/bomb") { _ in .response(headers: [("Content-Encoding", "gzip, gzip")], body: BombTests.gigabyteBomb) }
        let client = try makeClient { $0.limits.maxBodyBytes = nil }
        let bomb = request("/bomb")
        try await assertSurvives(.decompressionBomb, client: client, maxGrowth: 32 << 20) {
            _ = try await client.send(bomb)
        }
    }

    func testTenMegabyteHeaderLine() async throws {
        // Allocated (and touched) before memory is measured: only the client's share counts.
        let line = [UInt8](repeating: UInt8(ascii: "a"), count: 10 << 20)
        server.route("/huge") { _ in .hugeHeaderLine(line) }
        let client = try makeClient()
        let huge = request("/huge")
        try await assertSurvives(.responseHeadTooLarge, client: client, maxGrowth: 8 << 20) {
            _ = try await client.send(huge)
        }
        XCTAssertEqual(line.count, 10 << 20)
    }

    func testFloodOfInterimResponses() async throws {
        server.route("/flood") { _ in .interimFlood(count: 10_000) }
        let client = try makeClient()
        let flood = request("/flood")
        try await assertSurvives(.tooManyInterimResponses, client: client) { _ = try await client.send(flood) }
    }

    // MARK: - redirects

    /// A 302 carrying `size` bytes of body, which the client must take in
    /// (or drop) before the next hop.
    private static func heavyRedirect(to location: String, size: Int = 2 << 20) -> TestServer.Reply {
        .response(status: 302, headers: [("Location", location)], body: [UInt8](repeating: 0x2E, count: size))
    }

    func testRedirectLoopWithHeavyBodiesIsALoopNotAHang() async throws {
        server.route("/loop/a") { _ in Self.heavyRedirect(to: "/loop/b") }
        server.route("/loop/b") { _ in Self.heavyRedirect(to: "/loop/c?x=1") }
        server.route("/loop/c") { _ in Self.heavyRedirect(to: "/loop/a") }
        // A generous hop limit: what stops this chain must be the loop check.
        let client = try makeClient { $0.redirects = PocketRedirectPolicy(maxHops: 1000) }
        let loop = request("/loop/a")
        let error = try await assertSurvives(.redirectLoop, client: client) { _ = try await client.send(loop) }
        XCTAssertEqual(error?.response?.status, 302)
        XCTAssertEqual(error?.message.components(separatedBy: " → ").count, 4, error?.message ?? "")
        // The stream path meets the same end, and drops each hop's body.
        try await assertSurvives(.redirectLoop, client: client) {
            let response = try await client.stream(loop)
            try await response.body.discard()
        }
    }

    func testEndlessRedirectChainStopsAtTheHopLimit() async throws {
        // Every URL is new (/chain/N → /chain/N+1), so only the limit ends it.
        server.defaultHandler = { r in
            guard r.path.hasPrefix("/chain/"), let n = Int(r.path.dropFirst(7)) else { return .text("no", status: 404) }
            return Self.heavyRedirect(to: "/chain/\(n + 1)")
        }
        let client = try makeClient()
        let chain = request("/chain/0")
        let served = server.requestCount
        let error = try await assertSurvives(.tooManyRedirects, client: client) { _ = try await client.send(chain) }
        XCTAssertEqual(error?.response?.status, 302)
        // The 20 good requests, the 2 before and after, and 1 + 10 hops: nothing more went out.
        XCTAssertEqual(server.requestCount - served, 1 + 20 + 1 + 1 + 10)
    }

    // MARK: - TLS

    private func tlsServer(cert: String, key: String) throws -> TestServer {
        var options = try TestServer.TLSOptions.localhost()
        options.certificateFile = cert
        options.keyFile = key
        let s = try TestServer(tls: options)
        s.route("/ok") { _ in .text("secure") }
        return s
    }

    func testBadCertificatesFailAloneWhileTrustedOriginsKeepWorking() async throws {
        let c = try TestCertificates.shared
        let good = try tlsServer(cert: c.serverCert, key: c.serverKey)
        defer { good.shutdown() }
        let client = try makeClient { $0.tls.caFile = c.caCert }
        let goodURLs = [url(server, "/ok"), URL(string: good.url(host: "localhost", path: "/ok"))!]
        let cases: [(String, String, PocketError.Code)] = [
            (c.selfSignedCert, c.selfSignedKey, .tlsUntrustedCertificate),
            (c.expiredCert, c.expiredKey, .tlsCertificateExpired),
            (c.wrongHostCert, c.wrongHostKey, .tlsHostnameMismatch),
        ]
        for (cert, key, code) in cases {
            let bad = try tlsServer(cert: cert, key: key)
            defer { bad.shutdown() }
            let target = PocketRequest(url: URL(string: bad.url(host: "localhost", path: "/ok"))!)
            try await assertSurvives(code, client: client, good: goodURLs) {
                // Repeated: a failed handshake leaves nothing behind to reuse.
                for _ in 0..<3 {
                    do { _ = try await client.send(target) } catch let e as PocketError where e.code == code { continue }
                }
                _ = try await client.send(target)
            }
            XCTAssertEqual(bad.requestCount, 0, "no request over an unverified connection")
        }
    }

    func testTLSCloseWithoutCloseNotifyInACloseDelimitedBody() async throws {
        let c = try TestCertificates.shared
        let tls = try tlsServer(cert: c.serverCert, key: c.serverKey)
        defer { tls.shutdown() }
        tls.route("/cut") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\n\r\n"), .pattern(count: 256 << 10), .sleep(milliseconds: 20),
                  .closeWithoutTLSNotify])
        }
        let client = try makeClient { $0.tls.caFile = c.caCert }
        let goodURLs = [URL(string: tls.url(host: "localhost", path: "/ok"))!, url(server, "/ok")]
        let cut = PocketRequest(url: URL(string: tls.url(host: "localhost", path: "/cut"))!)
        try await assertSurvives(.truncatedBody, client: client, good: goodURLs) { _ = try await client.send(cut) }
    }
}

/// `total` zero bytes in `chunk`-sized pieces, made one at a time as the
/// upload asks for them (an AsyncStream would buffer them all up front).
struct ZeroChunks: AsyncSequence, Sendable {
    let total: Int
    let chunk: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var left: Int
        let chunk: Int
        mutating func next() async -> Data? {
            guard left > 0 else { return nil }
            let n = Swift.min(left, chunk)
            left -= n
            return Data(count: n)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: total, chunk: chunk) }
}
