import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport
import CHTTPEngine

/// Engine-level properties seen through the client.
final class EngineTests: XCTestCase {
    func testSeveralLoopsServeRequests() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient { $0.engineThreads = 3 }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<60 { group.addTask { try await client.send(PocketRequest(url: url(server, "/"))).status } }
            for try await s in group { XCTAssertEqual(s, 200) }
        }
        // Each loop has its own pool: at least one connection per loop.
        XCTAssertGreaterThanOrEqual(server.acceptedConnections, 3)
        try await client.shutdown()
    }

    func testBusyLoopNeedsNoWakeups() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        let request = PocketRequest(url: url(server, "/"))
        _ = try await client.send(request)
        let before = client.engine.stats.wakeups
        // Tasks on the loop executor submit from the loop thread itself, which
        // is awake by definition: no eventfd write per request.
        try await withTaskExecutorPreference(client.executor) {
            try await sendSequentially(client, request, count: 200)
        }
        let wakeups = client.engine.stats.wakeups - before
        XCTAssertLessThan(wakeups, 20, "wakeups: \(wakeups) for 200 requests")
    }

    func testOneRequestAtATimeFromThePoolIsWrittenByItsSender() async throws {
        // Tasks on the global executor, one request at a time: each finds the
        // loop asleep with nothing in flight, and writes its request itself
        // (the direct pass) instead of waking the loop through its eventfd.
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        let request = PocketRequest(url: url(server, "/"))
        _ = try await client.send(request)
        let before = client.engine.stats.wakeups
        try await sendSequentially(client, request, count: 200)
        let wakeups = client.engine.stats.wakeups - before
        // Without the direct pass this is one per request (200); a sender
        // that finds the loop between deciding to sleep and sleeping still
        // wakes it.
        XCTAssertLessThan(wakeups, 100, "wakeups: \(wakeups) for 200 requests")
    }

    func testADeadlineArmedByTheSenderWakesTheSleepingLoop() async throws {
        // The loop sleeps up to a second while a pooled connection's idle
        // timer is armed; a request written by its sender (direct pass) with
        // a shorter read timeout must wake it, or the timeout would fire up
        // to a second late.
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/ok") { _ in .text("ok") }
        server.route("/stall") { _ in .stall(milliseconds: 3000) }
        let client = try makeClient()
        _ = try await client.send(PocketRequest(url: url(server, "/ok")))
        try await Task.sleep(for: .milliseconds(50)) // the loop is asleep again
        var request = PocketRequest(url: url(server, "/stall"))
        request.timeouts = PocketTimeouts(connect: .seconds(5), read: .milliseconds(150), total: nil)
        let start = ContinuousClock.now
        await assertPocketError(.readTimeout) { _ = try await client.send(request) }
        let elapsed = ContinuousClock.now - start
        XCTAssertLessThan(elapsed, .milliseconds(700 * sanitizerSlowdown), "read timeout of 150 ms fired after \(elapsed)")
    }

    func testHundredThousandPendingTimersStayCheap() async throws {
        // One connection, stalled; 100,000 requests wait behind it, each with
        // its own deadline timer in the heap. Shutdown fails them all.
        let server = try TestServer()
        defer { server.shutdown() }
        // Stalled for longer than queueing them all takes, even under a
        // sanitizer on a busy machine: once it answered, the next request
        // would take the connection and the count below never reach n.
        server.route("/") { _ in .stall(milliseconds: 600_000) }
        let client = try makeClient {
            $0.maxConnectionsPerOrigin = 1
            $0.timeouts = PocketTimeouts(connect: .seconds(30), read: .seconds(60), total: .seconds(120))
        }
        // Under a sanitizer every task carries shadow memory and redzones:
        // 100,000 waiting tasks take gigabytes and crawl on a shared 2-core
        // machine, so those builds queue 10,000 (still a deep heap of
        // deadlines).
        let n = sanitizerSlowdown == 1 ? 100_000 : 10_000
        let start = ContinuousClock.now
        let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<n {
                group.addTask {
                    do { _ = try await client.send(PocketRequest(url: url(server, "/"))); return false }
                    catch let e as PocketError { return e.code == .shutdown }
                }
            }
            // Wait until the engine holds them all (one in flight, the rest queued).
            while client.engine.pendingRequests < n {
                guard ContinuousClock.now - start < .seconds(60) * sanitizerSlowdown else {
                    XCTFail("the engine holds \(client.engine.pendingRequests) of \(n) requests after 60 s")
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            try await client.shutdown()
            var count = 0
            for try await ok in group where ok { count += 1 }
            return count
        }
        XCTAssertEqual(failures, n)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(30) * sanitizerSlowdown)
    }

    func testHostNamesResolveOffLoopAndTheCacheExpires() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok", closeConnection: true) } // every request connects anew
        let named = URL(string: "http://localhost:\(server.port)/")!
        let client = try makeClient { $0.dnsCacheTTL = .milliseconds(300) }
        let first = try await client.send(PocketRequest(url: named))
        XCTAssertGreaterThan(first.timings.dns, .zero, "first lookup goes to the resolver")
        let cached = try await client.send(PocketRequest(url: named))
        XCTAssertEqual(cached.timings.dns, .zero, "second connection uses the cache")
        XCTAssertGreaterThan(cached.timings.connect, .zero)
        try await Task.sleep(for: .milliseconds(400))
        let expired = try await client.send(PocketRequest(url: named))
        XCTAssertGreaterThan(expired.timings.dns, .zero, "the entry expired")
        // Numeric hosts never reach the resolver.
        let numeric = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(numeric.timings.dns, .zero)
    }

    func testNameThatDoesNotResolveIsADNSError() async throws {
        // A label longer than 63 bytes cannot be encoded in a DNS query, so the
        // resolver fails it locally: no packet leaves the machine.
        let host = String(repeating: "a", count: 70) + ".invalid"
        let client = try makeClient()
        let error = await assertPocketError(.dnsFailure) {
            try await client.send(PocketRequest(url: URL(string: "http://\(host):80/")!))
        }
        XCTAssertNotNil(error?.systemError)
    }
}
