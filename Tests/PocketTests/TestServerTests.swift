#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PocketTestSupport
import XCTest

/// Tests of the loopback `TestServer` itself, through plain blocking sockets
/// (no Pocket client involved), so a server bug is never mistaken for a
/// client bug.
final class TestServerTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server?.shutdown()
        server = nil
    }

    func testKeepAliveServesThreeRequestsOnOneConnection() throws {
        server.route("/hello") { request in .text("hello \(request.requestIndexOnConnection)") }
        let socket = try LoopbackRawClient(port: server.port)
        for i in 0..<3 {
            socket.send("GET /hello?i=\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try XCTUnwrap(socket.readResponse())
            XCTAssertTrue(response.head.hasPrefix("HTTP/1.1 200 OK\r\n"), response.head)
            XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "hello \(i)")
        }
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertEqual(server.requestCount, 3)
        let requests = server.receivedRequests
        XCTAssertEqual(requests.map(\.requestIndexOnConnection), [0, 1, 2])
        XCTAssertEqual(Set(requests.map(\.connectionIndex)), [0])
        XCTAssertEqual(requests[2].target, "/hello?i=2")
        XCTAssertEqual(requests[2].path, "/hello")
        XCTAssertEqual(requests[2].query, "i=2")
        XCTAssertEqual(server.openConnections, 1)
        socket.close()
        XCTAssertTrue(server.waitUntil { $0.openConnections == 0 })
    }

    func testChunkedReplyBytesOnTheWire() throws {
        server.route("/c") { _ in
            .chunked(chunks: [Array("Hel".utf8), [], Array("lo, chunks!".utf8)], trailers: [("X-Sum", "14")])
        }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (bytes, error) = socket.readToEOF()
        XCTAssertNil(error)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                       + "3\r\nHel\r\nb\r\nlo, chunks!\r\n0\r\nX-Sum: 14\r\n\r\n")
    }

    func testResetReachesTheClientAsECONNRESET() throws {
        server.route("/reset") { _ in .reset }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, error) = socket.readToEOF()
        XCTAssertEqual(bytes, [])
        XCTAssertEqual(error, ECONNRESET)
    }

    func testStallHoldsTheConnectionOpenThenCloses() throws {
        server.route("/stall") { _ in .stall(milliseconds: 700) }
        let socket = try LoopbackRawClient(port: server.port)
        let start = Date()
        socket.send("GET /stall HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(socket.receive(timeoutMilliseconds: 400), .timedOut, "nothing is sent while stalled")
        XCTAssertEqual(server.openConnections, 1)
        let (bytes, error) = socket.readToEOF()
        XCTAssertEqual(bytes, [])
        XCTAssertNil(error, "a stall ends with a clean close")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.65)
    }

    func testStallEndsWhenTheClientGivesUp() throws {
        server.route("/stall") { _ in .stall(milliseconds: 60_000) }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /stall HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(server.waitUntil { $0.requestCount == 1 })
        socket.close()
        XCTAssertTrue(server.waitUntil(timeout: 1) { $0.openConnections == 0 })
    }

    func testRawScriptInPiecesWithDelaysThenKeepAlive() throws {
        server.route("/slow") { _ in
            .raw([
                .sendString("HTTP/1.1 200 OK\r\nContent-"),
                .sleep(milliseconds: 100),
                .sendString("Length: 10\r\n\r\n"),
                .trickle(Array("0123456789".utf8), chunkSize: 3, delayMilliseconds: 20),
            ])
        }
        server.route("/fast") { _ in .text("ok") }
        let socket = try LoopbackRawClient(port: server.port)
        let start = Date()
        socket.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        let slow = try XCTUnwrap(socket.readResponse())
        XCTAssertEqual(String(decoding: slow.body, as: UTF8.self), "0123456789")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.15)
        socket.send("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
        let fast = try XCTUnwrap(socket.readResponse())
        XCTAssertEqual(String(decoding: fast.body, as: UTF8.self), "ok")
        XCTAssertEqual(server.acceptedConnections, 1)
    }

    func testCloseMidBodySendsPrefixThenFIN() throws {
        server.route("/cut") { _ in .closeMidBody(declaredLength: 100, sentPrefix: Array("part".utf8)) }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, error) = socket.readToEOF()
        XCTAssertNil(error)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
    }

    func testParsesHeadersAndBodiesAndRecordsTheRawHead() throws {
        server.route("/echo") { request in .response(body: request.body) }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("POST /echo HTTP/1.1\r\nHost: x\r\nX-Mixed-Case: One\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(try XCTUnwrap(socket.readResponse()).body, Array("hello".utf8))
        socket.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "2;ext=1\r\nab\r\n3\r\ncde\r\n0\r\nX-Trailer: t\r\n\r\n")
        XCTAssertEqual(try XCTUnwrap(socket.readResponse()).body, Array("abcde".utf8))

        let requests = server.receivedRequests
        XCTAssertEqual(requests.count, 2)
        XCTAssertEqual(requests[0].method, "POST")
        XCTAssertEqual(requests[0].header("x-mixed-case"), "One")
        XCTAssertEqual(requests[0].header("CONTENT-LENGTH"), "5")
        XCTAssertEqual(requests[0].bodyText, "hello")
        XCTAssertEqual(requests[1].trailers.first?.1, "t")
        XCTAssertEqual(String(decoding: server.lastRequestHead, as: UTF8.self),
                       "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    }

    func testMalformedHeadIsRejectedButRecorded() throws {
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET / HTTP/1.1\r\nX-Evil: a\nInjected: b\r\n\r\n")
        let (bytes, _) = socket.readToEOF()
        XCTAssertTrue(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 400 "))
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(String(decoding: server.lastRequestHead, as: UTF8.self),
                       "GET / HTTP/1.1\r\nX-Evil: a\nInjected: b\r\n\r\n")
    }

    func testUnroutedPathIs404AndDefaultHandlerOverrides() throws {
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(try XCTUnwrap(socket.readResponse()).head.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        server.defaultHandler = { request in .text("default for \(request.path)", status: 203) }
        socket.send("GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try XCTUnwrap(socket.readResponse())
        XCTAssertTrue(response.head.hasPrefix("HTTP/1.1 203 "))
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "default for /other")
    }

    func testHeadResponseHasLengthButNoBody() throws {
        server.route("/h") { _ in .text("twelve bytes") }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (bytes, _) = socket.readToEOF()
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.contains("Content-Length: 12\r\n"), text)
        XCTAssertTrue(text.hasSuffix("\r\n\r\n"), text)
    }

    func testCloseIdleConnectionsClosesWaitingConnections() throws {
        server.route("/a") { _ in .text("a") }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try XCTUnwrap(socket.readResponse())
        XCTAssertEqual(server.closeIdleConnections(), 1)
        XCTAssertEqual(server.openConnections, 0)
        XCTAssertEqual(socket.receive(timeoutMilliseconds: 1000), .closed)

        let second = try LoopbackRawClient(port: server.port)
        second.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNotNil(second.readResponse())
        XCTAssertEqual(server.acceptedConnections, 2)
    }

    func testMaxRequestsPerConnectionAnnouncesAndCloses() throws {
        server.maxRequestsPerConnection = 2
        server.route("/a") { _ in .text("a") }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertFalse(try XCTUnwrap(socket.readResponse()).head.contains("Connection: close"))
        socket.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(try XCTUnwrap(socket.readResponse()).head.contains("Connection: close\r\n"))
        XCTAssertEqual(socket.receive(timeoutMilliseconds: 1000), .closed)
    }

    func testCountsConcurrentConnections() throws {
        server.route("/a") { _ in .text("a") }
        let sockets = try (0..<3).map { _ in try LoopbackRawClient(port: server.port) }
        for socket in sockets {
            socket.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertNotNil(socket.readResponse())
        }
        XCTAssertEqual(server.acceptedConnections, 3)
        XCTAssertEqual(server.maxConcurrentConnections, 3)
        sockets[0].close()
        XCTAssertTrue(server.waitUntil { $0.openConnections == 2 })
        server.resetStatistics()
        XCTAssertEqual(server.acceptedConnections, 0)
        XCTAssertEqual(server.maxConcurrentConnections, 2)
    }

    func testExpectContinueGetsInterimResponse() throws {
        server.route("/up") { request in .text("got \(request.body.count)") }
        let socket = try LoopbackRawClient(port: server.port)
        socket.send("PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        let interim = try XCTUnwrap(socket.readResponse())
        XCTAssertTrue(interim.head.hasPrefix("HTTP/1.1 100 Continue\r\n"))
        socket.send("abc")
        XCTAssertEqual(String(decoding: try XCTUnwrap(socket.readResponse()).body, as: UTF8.self), "got 3")
    }

    func testShutdownIsBoundedWithStalledAndIdleConnections() throws {
        server.route("/stall") { _ in .stall(milliseconds: 60_000) }
        let stalled = try LoopbackRawClient(port: server.port)
        stalled.send("GET /stall HTTP/1.1\r\nHost: x\r\n\r\n")
        let idle = try LoopbackRawClient(port: server.port)
        XCTAssertTrue(server.waitUntil { $0.requestCount == 1 && $0.openConnections == 2 })
        let start = Date()
        server.shutdown()
        server.shutdown()
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.5)
        XCTAssertEqual(idle.receive(timeoutMilliseconds: 1000), .closed)
        XCTAssertThrowsError(try LoopbackRawClient(port: server.port), "the listener is closed")
    }

    func testIPv6Loopback() throws {
        // Required, not skipped: the machines this project runs on (and CI) have ::1.
        let v6 = try TestServer(host: "::1")
        defer { v6.shutdown() }
        XCTAssertEqual(v6.baseURL, "http://[::1]:\(v6.port)")
        v6.route("/six") { _ in .text("six") }
        let socket = try LoopbackRawClient(port: v6.port, host: "::1")
        socket.send("GET /six HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try XCTUnwrap(socket.readResponse()).body, Array("six".utf8))
    }
}

/// A tiny blocking TCP client for poking a server byte by byte (shared by
/// `TestServerTests` and `NginxFixtureTests`; deliberately not in
/// PocketTestSupport so the server is checked by independent code).
final class LoopbackRawClient {
    enum Received: Equatable {
        case data([UInt8])
        case closed
        case failed(Int32)
        case timedOut
    }

    struct Failure: Error {
        var what: String
        var code: Int32
    }

    private var fd: Int32
    private var pending: [UInt8] = []

    init(port: Int, host: String = "127.0.0.1") throws {
        let v6 = host.contains(":")
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(what: "socket", code: errno) }
        let rc: Int32
        if v6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port)).bigEndian
            inet_pton(AF_INET6, host, &addr.sin6_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port)).bigEndian
            inet_pton(AF_INET, host, &addr.sin_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(what: "connect", code: code)
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// One bounded receive (buffered bytes first).
    func receive(timeoutMilliseconds: Int) -> Received {
        if !pending.isEmpty {
            defer { pending = [] }
            return .data(pending)
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeoutMilliseconds)) > 0 else { return .timedOut }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { return .data(Array(buffer[0..<n])) }
        return n == 0 ? .closed : .failed(errno)
    }

    /// Reads until EOF or an error (5 s at most); returns the bytes and the
    /// errno of a failure, nil for a clean EOF.
    func readToEOF() -> ([UInt8], Int32?) {
        var all: [UInt8] = []
        while true {
            switch receive(timeoutMilliseconds: 5000) {
            case let .data(bytes): all += bytes
            case .closed: return (all, nil)
            case let .failed(code): return (all, code)
            case .timedOut: return (all, ETIMEDOUT)
            }
        }
    }

    /// Reads one response whose body is delimited by Content-Length (or
    /// absent); leftover bytes stay buffered. Nil on EOF/timeout first.
    func readResponse() -> (head: String, body: [UInt8])? {
        var buffer: [UInt8] = []
        while true {
            if let range = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: buffer[..<range.upperBound], as: UTF8.self)
                var length = 0
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                while buffer.count < range.upperBound + length {
                    guard case let .data(more) = receive(timeoutMilliseconds: 5000) else { return nil }
                    buffer += more
                }
                pending = Array(buffer[(range.upperBound + length)...])
                return (head, Array(buffer[range.upperBound..<(range.upperBound + length)]))
            }
            guard case let .data(more) = receive(timeoutMilliseconds: 5000) else { return nil }
            buffer += more
        }
    }
}
