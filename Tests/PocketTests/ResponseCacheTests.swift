import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The response cache (RFC 9111, private) through the in-process server:
/// hits make no request, stale entries a conditional one, and the store
/// keeps its word on disk, across restarts and against damaged files.
final class ResponseCacheTests: XCTestCase {
    var server: TestServer!
    /// The cache's wall clock, moved by the tests.
    let clock = Lock<Double>(1_700_000_000)

    override func setUp() async throws {
        server = try TestServer()
    }

    override func tearDown() async throws {
        server.shutdown()
        server = nil
    }

    func memoryCache(capacity: Int = 1 << 20, heuristic: Bool = false,
                     willCache: (@Sendable (PocketRequest, PocketResponse) -> PocketResponse?)? = nil) -> PocketResponseCache {
        let clock = self.clock
        return PocketResponseCache(store: MemoryCacheStore(capacity: capacity, maxEntryBytes: capacity / 2), heuristicFreshness: heuristic,
                                   willCache: willCache, now: { clock.withLock { $0 } })
    }

    func diskCache(_ directory: URL, capacity: Int = 1 << 20) throws -> PocketResponseCache {
        let clock = self.clock
        return PocketResponseCache(store: try DiskCacheStore(directory: directory, capacity: capacity, maxEntryBytes: capacity / 2),
                                   heuristicFreshness: false, willCache: nil, now: { clock.withLock { $0 } })
    }

    func client(_ cache: PocketResponseCache) throws -> PocketClient {
        try makeClient { $0.handling.cache = cache }
    }

    func requests(_ path: String) -> [TestServer.Request] { server.receivedRequests.filter { $0.target == path } }

    func get(_ client: PocketClient, _ path: String, headers: PocketHeaders = [:], policy: PocketCachePolicy? = nil,
             method: PocketMethod = .get) async throws -> PocketResponse {
        var request = PocketRequest(method: method, url: url(server, path), headers: headers)
        request.cachePolicy = policy
        return try await client.send(request)
    }

    func advance(_ seconds: Double) { clock.withLock { $0 += seconds } }

    /// `path` answers `body` with `headers`; a request whose If-None-Match
    /// is `etag` gets 304 with `notModified` fields.
    func route(_ path: String, headers: [(String, String)], body: String = "catalogue v1", etag: String? = nil,
               notModified: [(String, String)] = []) {
        server.route(path) { request in
            if let etag, request.header("If-None-Match") == etag {
                return .response(status: 304, headers: notModified + [("ETag", etag)])
            }
            return .text(body, headers: headers + (etag.map { [("ETag", $0)] } ?? []))
        }
    }

    // MARK: freshness and revalidation

    func testAFreshHitMakesNoRequest() async throws {
        route("/config", headers: [("Cache-Control", "max-age=60")])
        let cache = memoryCache()
        let client = try client(cache)
        let first = try await get(client, "/config")
        XCTAssertFalse(first.fromCache)
        advance(30)
        let second = try await get(client, "/config")
        XCTAssertTrue(second.fromCache)
        XCTAssertFalse(second.revalidated)
        XCTAssertEqual(second.text, "catalogue v1")
        XCTAssertEqual(second.headers["Age"], "30")
        XCTAssertEqual(requests("/config").count, 1, "the hit made no request")
        XCTAssertEqual(cache.statistics.hits, 1)
        XCTAssertEqual(cache.statistics.stores, 1)
        // HEAD is answered from the GET's entry, without a body.
        let head = try await get(client, "/config", method: .head)
        XCTAssertTrue(head.fromCache)
        XCTAssertTrue(head.body.isEmpty)
        XCTAssertEqual(requests("/config").count, 1)
        // Expires works as max-age does; past it, the network again.
        // The clock is at 1_700_000_030 here.
        route("/expires", headers: [("Date", "Tue, 14 Nov 2023 22:13:50 GMT"), ("Expires", "Tue, 14 Nov 2023 22:14:00 GMT")])
        _ = try await get(client, "/expires")
        advance(5)
        let r1 = try await get(client, "/expires")
        XCTAssertTrue(r1.fromCache)
        advance(10)
        let r2 = try await get(client, "/expires")
        XCTAssertFalse(r2.fromCache)
        XCTAssertEqual(requests("/expires").count, 2)
        try await client.shutdown()
    }

    func testAStaleEntryMakesAConditionalRequestAnd304RefreshesIt() async throws {
        route("/keys", headers: [("Cache-Control", "max-age=10"), ("X-Version", "1")], etag: "\"k1\"",
              notModified: [("Cache-Control", "max-age=10"), ("X-Version", "2")])
        let cache = memoryCache()
        let client = try client(cache)
        _ = try await get(client, "/keys")
        advance(20)
        let revalidated = try await get(client, "/keys")
        XCTAssertEqual(requests("/keys").count, 2)
        XCTAssertEqual(requests("/keys").last?.header("If-None-Match"), "\"k1\"")
        XCTAssertEqual(revalidated.status, 200)
        XCTAssertTrue(revalidated.fromCache)
        XCTAssertTrue(revalidated.revalidated)
        XCTAssertEqual(revalidated.text, "catalogue v1", "the stored body")
        XCTAssertEqual(revalidated.headers["X-Version"], "2", "the 304's fields replace the stored ones")
        XCTAssertEqual(cache.statistics.revalidations, 1)
        // Fresh again for 10 s from the 304.
        advance(5)
        let hit = try await get(client, "/keys")
        XCTAssertTrue(hit.fromCache)
        XCTAssertFalse(hit.revalidated)
        XCTAssertEqual(hit.headers["X-Version"], "2")
        XCTAssertEqual(requests("/keys").count, 2)
        // A changed resource: the 200 replaces the entry.
        advance(20)
        route("/keys", headers: [("Cache-Control", "max-age=10")], body: "catalogue v2", etag: "\"k2\"")
        let changed = try await get(client, "/keys")
        XCTAssertEqual(changed.text, "catalogue v2")
        XCTAssertFalse(changed.fromCache)
        let r3 = try await get(client, "/keys")
        XCTAssertEqual(r3.text, "catalogue v2")
        XCTAssertEqual(requests("/keys").count, 3)
        try await client.shutdown()
    }

    /// Age is delta-seconds (RFC 9111 §5.1): "0x3c" or "6e1" is no Age at
    /// all, not 60 seconds that would make a max-age=60 response stale.
    func testAnAgeThatIsNotDigitsIsIgnored() async throws {
        route("/hex", headers: [("Cache-Control", "max-age=60"), ("Age", "0x3c")])
        route("/exp", headers: [("Cache-Control", "max-age=60"), ("Age", "6e1")])
        route("/real", headers: [("Cache-Control", "max-age=60"), ("Age", "60")])
        let client = try client(memoryCache())
        for path in ["/hex", "/exp", "/real"] { _ = try await get(client, path) }
        let hex = try await get(client, "/hex"), exp = try await get(client, "/exp"), real = try await get(client, "/real")
        XCTAssertTrue(hex.fromCache && !hex.revalidated, "Age: 0x3c is not 60")
        XCTAssertTrue(exp.fromCache && !exp.revalidated, "Age: 6e1 is not 60")
        XCTAssertEqual(requests("/real").count, 2, "a real Age of 60 makes max-age=60 stale")
        try await client.shutdown()
    }

    func testVaryKeepsVariantsApart() async throws {
        server.route("/greeting") { request in
            .text(request.header("Accept-Language") == "fr" ? "bonjour" : "hello",
                  headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")])
        }
        let client = try client(memoryCache())
        let r4 = try await get(client, "/greeting", headers: ["Accept-Language": "en"])
        XCTAssertEqual(r4.text, "hello")
        let french = try await get(client, "/greeting", headers: ["Accept-Language": "fr"])
        XCTAssertEqual(french.text, "bonjour")
        XCTAssertFalse(french.fromCache, "a Vary mismatch misses")
        let english = try await get(client, "/greeting", headers: ["Accept-Language": "en"])
        XCTAssertTrue(english.fromCache)
        XCTAssertEqual(english.text, "hello")
        let r5 = try await get(client, "/greeting", headers: ["Accept-Language": "fr"])
        XCTAssertTrue(r5.fromCache)
        XCTAssertEqual(requests("/greeting").count, 2)
        // Vary: * is never stored.
        route("/any", headers: [("Cache-Control", "max-age=60"), ("Vary", "*")])
        _ = try await get(client, "/any")
        let r6 = try await get(client, "/any")
        XCTAssertFalse(r6.fromCache)
        try await client.shutdown()
    }

    func testNoStoreNoCachePrivateAndMustRevalidate() async throws {
        route("/nostore", headers: [("Cache-Control", "no-store, max-age=60")])
        route("/nocache", headers: [("Cache-Control", "no-cache, max-age=60")], etag: "\"n\"")
        route("/private", headers: [("Cache-Control", "private, max-age=60")])
        route("/strict", headers: [("Cache-Control", "max-age=1, must-revalidate")], etag: "\"s\"",
              notModified: [("Cache-Control", "max-age=1, must-revalidate")])
        route("/lenient", headers: [("Cache-Control", "max-age=1")], etag: "\"l\"")
        let client = try client(memoryCache())
        for path in ["/nostore", "/nocache", "/private", "/strict", "/lenient"] { _ = try await get(client, path) }
        advance(5)
        let r7 = try await get(client, "/nostore")
        XCTAssertFalse(r7.fromCache, "no-store: never stored")
        XCTAssertEqual(requests("/nostore").count, 2)
        let noCache = try await get(client, "/nocache")
        XCTAssertTrue(noCache.revalidated, "no-cache: stored, always revalidated")
        XCTAssertEqual(requests("/nocache").count, 2)
        let r8 = try await get(client, "/private")
        XCTAssertTrue(r8.fromCache, "a private cache stores private responses")
        // Stale: returnCacheElseLoad serves it, unless must-revalidate.
        let lenient = try await get(client, "/lenient", policy: .returnCacheElseLoad)
        XCTAssertTrue(lenient.fromCache)
        XCTAssertFalse(lenient.revalidated)
        XCTAssertEqual(requests("/lenient").count, 1)
        let strict = try await get(client, "/strict", policy: .returnCacheElseLoad)
        XCTAssertTrue(strict.revalidated, "must-revalidate: never served stale")
        XCTAssertEqual(requests("/strict").count, 2)
        // A request's own no-cache revalidates a fresh entry.
        let r9 = try await get(client, "/strict", headers: ["Cache-Control": "no-cache"])
        XCTAssertTrue(r9.revalidated)
        try await client.shutdown()
    }

    /// Without max-age or Expires a response is stale at once (it is kept
    /// for revalidation); heuristic freshness, when asked for, gives it 10%
    /// of its Last-Modified age.
    func testHeuristicFreshnessIsOffByDefault() async throws {
        // The clock is at Tue, 14 Nov 2023 22:13:20 GMT; modified 10 days before.
        route("/h", headers: [("Date", "Tue, 14 Nov 2023 22:13:20 GMT"), ("Last-Modified", "Sat, 04 Nov 2023 22:13:20 GMT")])
        let strict = try client(memoryCache())
        _ = try await get(strict, "/h")
        let again = try await get(strict, "/h")
        XCTAssertFalse(again.fromCache && !again.revalidated, "no heuristic: never a plain hit")
        XCTAssertEqual(requests("/h").last?.header("If-Modified-Since"), "Sat, 04 Nov 2023 22:13:20 GMT")
        try await strict.shutdown()
        let lenient = try client(memoryCache(heuristic: true))
        _ = try await get(lenient, "/h")
        let before = requests("/h").count
        advance(20 * 3600)
        let hit = try await get(lenient, "/h")
        XCTAssertTrue(hit.fromCache, "10% of 10 days: a day of freshness")
        XCTAssertEqual(requests("/h").count, before)
        advance(5 * 3600)
        let stale = try await get(lenient, "/h")
        XCTAssertEqual(requests("/h").count, before + 1, "past the day: \(stale.fromCache)")
        try await lenient.shutdown()
    }

    func testPoliciesAndOnlyIfCached() async throws {
        route("/p", headers: [("Cache-Control", "max-age=60")])
        let client = try client(memoryCache())
        let error = await assertPocketError(.notCached) { try await self.get(client, "/p", policy: .onlyIfCached) }
        XCTAssertTrue(error?.message.contains("/p") ?? false, "\(String(describing: error))")
        XCTAssertEqual(requests("/p").count, 0, "only-if-cached never goes to the network")
        _ = try await get(client, "/p")
        let r10 = try await get(client, "/p", policy: .onlyIfCached)
        XCTAssertTrue(r10.fromCache)
        let r11 = try await get(client, "/p", policy: .reloadIgnoringCache)
        XCTAssertFalse(r11.fromCache)
        XCTAssertEqual(requests("/p").count, 2)
        advance(3600)
        let r12 = try await get(client, "/p", policy: .onlyIfCached)
        XCTAssertTrue(r12.fromCache, "stale is fine for only-if-cached")
        let r13 = try await get(client, "/p", policy: .returnCacheElseLoad)
        XCTAssertTrue(r13.fromCache)
        XCTAssertEqual(requests("/p").count, 2)
        // Without a cache, only-if-cached is a miss.
        let bare = try makeClient()
        var request = PocketRequest(url: url(server, "/p"))
        request.cachePolicy = .onlyIfCached
        await assertPocketError(.notCached) { try await bare.send(request) }
        try await bare.shutdown()
        try await client.shutdown()
    }

    func testUnsafeMethodsInvalidate() async throws {
        route("/items/7", headers: [("Cache-Control", "max-age=60")])
        route("/items", headers: [("Cache-Control", "max-age=60")])
        server.route("/items/7/rename") { _ in .text("ok", headers: [("Content-Location", "/items")]) }
        let cache = memoryCache()
        let client = try client(cache)
        _ = try await get(client, "/items/7")
        _ = try await get(client, "/items")
        _ = try await get(client, "/items/7", method: .put)
        let r14 = try await get(client, "/items/7")
        XCTAssertFalse(r14.fromCache, "PUT invalidated the GET entry")
        let r15 = try await get(client, "/items")
        XCTAssertTrue(r15.fromCache)
        _ = try await get(client, "/items/7/rename", method: .post)
        let r16 = try await get(client, "/items")
        XCTAssertFalse(r16.fromCache, "Content-Location on the same origin is invalidated too")
        XCTAssertEqual(cache.statistics.invalidations, 2)
        try await client.shutdown()
    }

    func testWillCacheAndAuthenticatedRequests() async throws {
        route("/a", headers: [("Cache-Control", "max-age=60")])
        route("/refused", headers: [("Cache-Control", "max-age=60")])
        route("/public", headers: [("Cache-Control", "public, max-age=60")])
        let cache = memoryCache(willCache: { request, response in
            guard request.url.path != "/refused" else { return nil }
            var response = response
            response.headers["X-Stored"] = "yes"
            return response
        })
        let client = try client(cache)
        _ = try await get(client, "/a")
        let hit = try await get(client, "/a")
        XCTAssertEqual(hit.headers["X-Stored"], "yes", "willCache changed what was stored")
        _ = try await get(client, "/refused")
        let r17 = try await get(client, "/refused")
        XCTAssertFalse(r17.fromCache, "willCache refused it")
        // Authorization: stored only when the response allows it.
        let auth: PocketHeaders = ["Authorization": "Bearer abc"]
        route("/me", headers: [("Cache-Control", "max-age=60")])
        _ = try await get(client, "/me", headers: auth)
        let r18 = try await get(client, "/me", headers: auth)
        XCTAssertFalse(r18.fromCache)
        _ = try await get(client, "/public", headers: auth)
        let r19 = try await get(client, "/public", headers: auth)
        XCTAssertTrue(r19.fromCache)
        try await client.shutdown()
    }

    // MARK: stores

    func testMemoryStoreEvictsTheLeastRecentlyUsed() async throws {
        let body = String(repeating: "x", count: 3000)
        for p in ["/1", "/2", "/3", "/4"] { route(p, headers: [("Cache-Control", "max-age=60")], body: body) }
        let cache = memoryCache(capacity: 3 * (3000 + 512))
        let client = try client(cache)
        for p in ["/1", "/2", "/3"] { _ = try await get(client, p) }
        let r20 = try await get(client, "/1")
        XCTAssertTrue(r20.fromCache) // /2 is now the least recently used
        _ = try await get(client, "/4")
        XCTAssertLessThanOrEqual(cache.byteCount, 3 * (3000 + 512))
        let r21 = try await get(client, "/1")
        XCTAssertTrue(r21.fromCache)
        let r22 = try await get(client, "/2")
        XCTAssertFalse(r22.fromCache, "the least recently used went")
        try await client.shutdown()
    }

    func testDiskStoreSurvivesARestartEvictsAndDropsDamagedEntries() async throws {
        let directory = try temporaryDirectory("cache")
        let big = String(repeating: "y", count: 100_000)
        for p in ["/d1", "/d2", "/d3", "/d4"] { route(p, headers: [("Cache-Control", "max-age=600")], body: p + big) }
        var cache = try diskCache(directory, capacity: 350_000)
        var client = try client(cache)
        for p in ["/d1", "/d2", "/d3"] { _ = try await get(client, p) }
        let r23 = try await get(client, "/d1")
        XCTAssertTrue(r23.fromCache)
        _ = try await get(client, "/d4") // past the cap: /d2, the least recently used, goes
        XCTAssertLessThanOrEqual(cache.byteCount, 350_000)
        XCTAssertEqual(try cacheFiles(directory).count, 3)
        try await client.shutdown()

        // A restart: a new cache on the same directory.
        cache = try diskCache(directory, capacity: 350_000)
        client = try self.client(cache)
        for p in ["/d1", "/d3", "/d4"] {
            let hit = try await get(client, p)
            XCTAssertTrue(hit.fromCache, p)
            XCTAssertEqual(hit.text, p + big)
        }
        let r24 = try await get(client, "/d2", headers: ["Cache-Control": "no-store"]) // not stored again
        XCTAssertFalse(r24.fromCache)
        XCTAssertEqual(requests("/d2").count, 2)
        try await client.shutdown()

        // Damage: a file cut short, a flipped body byte, a flipped head byte.
        let files = try cacheFiles(directory)
        XCTAssertEqual(files.count, 3)
        let entries = try files.map { file in (file, try Data(contentsOf: file)) }
        func owner(_ path: String) -> URL { entries.first { String(decoding: $0.1.prefix(20), as: UTF8.self).contains(path + "y") }!.0 }
        let cut = owner("/d1"), flipped = owner("/d3"), headFlipped = owner("/d4")
        let cutData = try Data(contentsOf: cut)
        try cutData.prefix(cutData.count / 2).write(to: cut)
        var bytes = try Data(contentsOf: flipped)
        bytes[50_000] ^= 0x01
        try bytes.write(to: flipped)
        cache = try diskCache(directory, capacity: 350_000)
        client = try self.client(cache)
        for p in ["/d1", "/d3"] {
            let answer = try await get(client, p)
            XCTAssertFalse(answer.fromCache, "\(p): a damaged entry is never served")
            XCTAssertEqual(answer.text, p + big)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: cut.path), "the cut file was removed")
        XCTAssertFalse(FileManager.default.fileExists(atPath: flipped.path), "the altered file was removed")
        XCTAssertEqual(cache.statistics.corruptEntries, 1, "the flipped body was found on reading")
        try await client.shutdown()
        bytes = try Data(contentsOf: headFlipped)
        bytes[bytes.count - 60] ^= 0x20
        try bytes.write(to: headFlipped)
        cache = try diskCache(directory, capacity: 350_000)
        XCTAssertFalse(FileManager.default.fileExists(atPath: headFlipped.path), "a damaged head is removed at start")
        client = try self.client(cache)
        let r25 = try await get(client, "/d4")
        XCTAssertFalse(r25.fromCache)
        try await client.shutdown()
    }

    func cacheFiles(_ directory: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil).filter { $0.pathExtension == "pkc" }
    }

    func testConcurrentReadersAndWritersGetTheirOwnBodies() async throws {
        for i in 0..<8 { route("/c\(i)", headers: [("Cache-Control", "max-age=60")], body: "body \(i) " + String(repeating: "\(i)", count: 20_000)) }
        let directory = try temporaryDirectory("cache-concurrent")
        let cache = try diskCache(directory, capacity: 100_000)
        let client = try client(cache)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<64 {
                let target = url(server, "/c\(n % 8)")
                group.addTask {
                    let i = n % 8
                    let response = try await client.send(PocketRequest(url: target))
                    XCTAssertEqual(response.text, "body \(i) " + String(repeating: "\(i)", count: 20_000))
                }
            }
            try await group.waitForAll()
        }
        XCTAssertLessThanOrEqual(cache.byteCount, 100_000)
        try await client.shutdown()
    }

    // MARK: streams

    func testAStreamIsStoredAsItIsReadAndOnlyWhenReadToTheEnd() async throws {
        route("/s", headers: [("Cache-Control", "max-age=60")], body: String(repeating: "s", count: 300_000))
        route("/partial", headers: [("Cache-Control", "max-age=60")], body: String(repeating: "p", count: 3_000_000))
        let directory = try temporaryDirectory("cache-stream")
        let cache = try diskCache(directory, capacity: 16 << 20)
        let client = try client(cache)
        let first = try await client.stream(PocketRequest(url: url(server, "/s")))
        XCTAssertFalse(first.fromCache)
        let firstBody = try await first.body.collect(upTo: 1 << 20)
        XCTAssertEqual(firstBody.count, 300_000)
        let again = try await client.stream(PocketRequest(url: url(server, "/s")))
        XCTAssertTrue(again.fromCache)
        XCTAssertEqual(again.headers["Age"], "0")
        let againBody = try await again.body.collect(upTo: 1 << 20)
        XCTAssertEqual(againBody, Data(repeating: UInt8(ascii: "s"), count: 300_000))
        let sent = try await get(client, "/s")
        XCTAssertTrue(sent.fromCache, "send and stream share the entry")
        XCTAssertEqual(requests("/s").count, 1)

        // A body dropped before its end is not stored.
        var partial: PocketStreamingResponse? = try await client.stream(PocketRequest(url: url(server, "/partial")), bufferSize: 64 << 10)
        var iterator = partial!.body.makeAsyncIterator()
        _ = try await iterator.next()
        partial = nil
        iterator = PocketResponseBodyStream(BodyStreamState(highWater: 1)).makeAsyncIterator()
        let afterDrop = try await get(client, "/partial")
        XCTAssertFalse(afterDrop.fromCache)
        XCTAssertEqual(requests("/partial").count, 2)
        XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.hasPrefix(".tmp-") },
                      "the abandoned write left nothing")
        try await client.shutdown()
    }

    func testAStreamedBodyGoesToDiskWithoutGrowingMemory() async throws {
        // Twice the bound, so a store that held the body could not pass;
        // the bound leaves room for ASan's 16 MiB quarantine of freed chunks.
        let size = 64 << 20
        server.route("/big") { _ in .generated(size: size, seed: 3, headers: [("Cache-Control", "max-age=60")], chunked: true) }
        let directory = try temporaryDirectory("cache-big")
        let cache = try diskCache(directory, capacity: 160 << 20)
        let client = try client(cache)
        let baseline = try MemoryStatus.resetPeak()
        let response = try await client.stream(PocketRequest(url: url(server, "/big")), bufferSize: 256 << 10)
        var received = 0
        for try await chunk in response.body { received += chunk.count }
        let peak = try MemoryStatus.read().peakKiB
        XCTAssertEqual(received, size)
        XCTAssertLessThan(peak - baseline.residentKiB, 32 * 1024, "a \(size >> 20) MiB body stored with a peak of +\(peak - baseline.residentKiB) KiB")
        XCTAssertEqual(cache.statistics.stores, 1)
        XCTAssertGreaterThan(cache.byteCount, size)
        let hit = try await get(client, "/big")
        XCTAssertTrue(hit.fromCache)
        XCTAssertEqual(SHA256Digest.hex(hit.body), BytePattern.sha256(seed: 3, size: size))
        XCTAssertEqual(requests("/big").count, 1)
        try await client.shutdown()
    }

    /// A hit through `stream` reads the stored body in pieces of at most
    /// 64 KiB as the caller asks: a large disk entry is never in memory
    /// whole, and a damaged one is a miss, never a wrong body.
    func testAStreamedHitComesFromTheStoreInBoundedPieces() async throws {
        let size = 48 << 20
        server.route("/large") { _ in .generated(size: size, seed: 5, headers: [("Cache-Control", "max-age=60")]) }
        let directory = try temporaryDirectory("cache-pieces")
        let cache = try diskCache(directory, capacity: 128 << 20)
        let client = try client(cache)
        let first = try await client.stream(PocketRequest(url: url(server, "/large")))
        for try await _ in first.body {}
        XCTAssertEqual(cache.statistics.stores, 1)

        let baseline = try MemoryStatus.resetPeak()
        let hit = try await client.stream(PocketRequest(url: url(server, "/large")))
        XCTAssertTrue(hit.fromCache)
        let hasher = SHA256Hasher()
        var pieces = 0, total = 0, largest = 0
        for try await piece in hit.body {
            pieces += 1
            total += piece.count
            largest = max(largest, piece.count)
            piece.withUnsafeBytes { hasher.update($0) }
        }
        let peak = try MemoryStatus.read().peakKiB
        XCTAssertEqual(total, size)
        XCTAssertEqual(hasher.finalizeHex(), BytePattern.sha256(seed: 5, size: size))
        XCTAssertEqual(largest, 64 << 10, "pieces of at most 64 KiB")
        XCTAssertEqual(pieces, size / (64 << 10))
        // Half the body, so a hit that loaded it whole could not pass (room left for ASan's quarantine).
        XCTAssertLessThan(peak - baseline.residentKiB, 24 * 1024, "a \(size >> 20) MiB hit streamed with a peak of +\(peak - baseline.residentKiB) KiB")
        XCTAssertEqual(requests("/large").count, 1, "a hit makes no request")

        // The memory store hands its body out in the same pieces.
        route("/m", headers: [("Cache-Control", "max-age=60")], body: String(repeating: "m", count: 200_000))
        let memory = try self.client(memoryCache())
        _ = try await get(memory, "/m")
        let fromMemory = try await memory.stream(PocketRequest(url: url(server, "/m")))
        XCTAssertTrue(fromMemory.fromCache)
        var sizes: [Int] = []
        for try await piece in fromMemory.body { sizes.append(piece.count) }
        XCTAssertEqual(sizes, [65_536, 65_536, 65_536, 3_392])

        // A byte flipped on disk: the check before the first piece finds it,
        // the entry goes, and the network answers.
        let file = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".pkc") })
        let handle = try FileHandle(forUpdating: directory.appending(path: file))
        try handle.seek(toOffset: 8 + 40 << 20)
        let byte = try XCTUnwrap(handle.readData(ofLength: 1).first)
        try handle.seek(toOffset: 8 + 40 << 20)
        handle.write(Data([byte ^ 0xFF]))
        try handle.close()
        let afterDamage = try await client.stream(PocketRequest(url: url(server, "/large")))
        XCTAssertFalse(afterDamage.fromCache)
        let fresh = SHA256Hasher()
        for try await piece in afterDamage.body { piece.withUnsafeBytes { fresh.update($0) } }
        XCTAssertEqual(fresh.finalizeHex(), BytePattern.sha256(seed: 5, size: size))
        XCTAssertEqual(cache.statistics.corruptEntries, 1)
        XCTAssertEqual(requests("/large").count, 2)
        try await client.shutdown()
        try await memory.shutdown()
    }

    func testAStreamRevalidatesAStaleEntry() async throws {
        route("/sv", headers: [("Cache-Control", "max-age=10")], etag: "\"e\"", notModified: [("Cache-Control", "max-age=10")])
        let client = try client(memoryCache())
        _ = try await client.stream(PocketRequest(url: url(server, "/sv"))).body.collect(upTo: 1 << 20)
        advance(30)
        let revalidated = try await client.stream(PocketRequest(url: url(server, "/sv")))
        XCTAssertTrue(revalidated.revalidated)
        let body = try await revalidated.body.collect(upTo: 1 << 20)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "catalogue v1")
        XCTAssertEqual(requests("/sv").last?.header("If-None-Match"), "\"e\"")
        try await client.shutdown()
    }
}
