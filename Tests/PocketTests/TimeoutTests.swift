import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport
#if canImport(Glibc)
import Glibc
#endif

final class TimeoutTests: XCTestCase {
    func testReadTimeoutOnStallingServer() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 5000) }
        let client = try makeClient { $0.timeouts = PocketTimeouts(connect: .seconds(5), read: .milliseconds(200), total: .seconds(10)) }
        let start = ContinuousClock.now
        let error = await assertPocketError(.readTimeout) { try await client.send(PocketRequest(url: url(server, "/"))) }
        let took = ContinuousClock.now - start
        XCTAssertEqual(error?.message, "no data received within the idle-read timeout",
                       "says what timed out; the connection is up, so no \"(Connection timed out)\"")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(190))
        XCTAssertLessThan(took, .seconds(3))
    }

    func testReadTimeoutIsIdleTimeNotTotalTime() async throws {
        // A body trickling a byte every 50 ms for ~0.6 s never idles 200 ms.
        let server = try TestServer()
        defer { server.shutdown() }
        let body = Array("abcdefghijkl".utf8)
        server.route("/") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n"),
                  .trickle(body, chunkSize: 1, delayMilliseconds: 50)])
        }
        let client = try makeClient { $0.timeouts = PocketTimeouts(connect: .seconds(5), read: .milliseconds(200), total: nil) }
        let r = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(r.body.count, body.count)
    }

    func testTotalDeadlineOnTricklingServer() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let body = Array(repeating: UInt8(ascii: "x"), count: 100)
        server.route("/") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n"),
                  .trickle(body, chunkSize: 1, delayMilliseconds: 30)])
        }
        let client = try makeClient { $0.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(5), total: .milliseconds(300)) }
        let start = ContinuousClock.now
        let error = await assertPocketError(.totalTimeout) { try await client.send(PocketRequest(url: url(server, "/"))) }
        XCTAssertEqual(error?.response?.status, 200, "the head that did arrive is kept")
        XCTAssertEqual(error?.message, "request did not finish within its total timeout")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(2))
    }

    func testPerRequestTimeoutsOverrideTheClient() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 3000) }
        let client = try makeClient()
        var request = PocketRequest(url: url(server, "/"))
        request.timeouts = PocketTimeouts(connect: .seconds(1), read: .milliseconds(100), total: nil)
        await assertPocketError(.readTimeout) { try await client.send(request) }
    }

    func testConnectTimeoutWhenTheAcceptQueueIsFull() async throws {
        // A listener with backlog 0 that never accepts: once its queue is full
        // the kernel drops further SYNs, so connect hangs until our deadline.
        let queue = try FullAcceptQueue()
        defer { queue.close() }
        let port = queue.port
        let client = try makeClient { $0.timeouts = PocketTimeouts(connect: .milliseconds(300), read: .seconds(5), total: .seconds(10)) }
        let start = ContinuousClock.now
        await assertPocketError(.connectTimeout) {
            try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:\(port)/")!))
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(3))
    }
}
