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
        let client = try makeClient { $0.timeouts = Timeouts(connect: .seconds(5), read: .milliseconds(200), total: .seconds(10)) }
        let start = ContinuousClock.now
        await assertPocketError(.readTimeout) { try await client.send(Request(url: url(server, "/"))) }
        let took = ContinuousClock.now - start
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
        let client = try makeClient { $0.timeouts = Timeouts(connect: .seconds(5), read: .milliseconds(200), total: nil) }
        let r = try await client.send(Request(url: url(server, "/")))
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
        let client = try makeClient { $0.timeouts = Timeouts(connect: .seconds(5), read: .seconds(5), total: .milliseconds(300)) }
        let start = ContinuousClock.now
        let error = await assertPocketError(.deadlineExceeded) { try await client.send(Request(url: url(server, "/"))) }
        XCTAssertEqual(error?.response?.status, 200, "the head that did arrive is kept")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(2))
    }

    func testPerRequestTimeoutsOverrideTheClient() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 3000) }
        let client = try makeClient()
        var request = Request(url: url(server, "/"))
        request.timeouts = Timeouts(connect: .seconds(1), read: .milliseconds(100), total: nil)
        await assertPocketError(.readTimeout) { try await client.send(request) }
    }

    func testConnectTimeoutWhenTheAcceptQueueIsFull() async throws {
        // A listener with backlog 0 that never accepts: once its queue is full
        // the kernel drops further SYNs, so connect hangs until our deadline.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        XCTAssertEqual(listen(fd, 0), 0)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        // Fill the queue with plain blocking-less connects.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var a = addr
            _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, len) } }
            fillers.append(c)
        }
        try await Task.sleep(for: .milliseconds(50))
        let client = try makeClient { $0.timeouts = Timeouts(connect: .milliseconds(300), read: .seconds(5), total: .seconds(10)) }
        let start = ContinuousClock.now
        await assertPocketError(.connectTimeout) {
            try await client.send(Request(url: URL(string: "http://127.0.0.1:\(port)/")!))
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(3))
    }
}
