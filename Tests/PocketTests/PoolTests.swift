import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

final class PoolTests: XCTestCase {
    func testHundredSequentialRequestsUseOneConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        for _ in 0..<100 {
            let r = try await client.send(PocketRequest(url: url(server, "/")))
            XCTAssertEqual(r.status, 200)
        }
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertEqual(server.requestCount, 100)
    }

    func testServerClosingIdleConnectionIsNoticedAndNextRequestSucceeds() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        server.closeIdleConnections()
        // The engine sees the FIN on the idle socket and drops it: the next
        // request opens a new connection without needing a retry.
        await assertEventually("") { server.openConnections == 0 }
        try await Task.sleep(for: .milliseconds(50))
        let r = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(r.status, 200)
        XCTAssertFalse(r.timings.reusedConnection)
        XCTAssertFalse(r.timings.retried)
        XCTAssertEqual(server.acceptedConnections, 2)
    }

    func testReusedConnectionClosedBeforeResponseIsRetriedOnceForIdempotentMethods() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        // First request answers normally; the second request on that same
        // connection is met with a close, as if the server's idle timer fired.
        server.route("/") { req in
            return req.requestIndexOnConnection == 0 ? .text("ok") : .close
        }
        let client = try makeClient()
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        let r = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(r.timings.retried)
        XCTAssertEqual(server.acceptedConnections, 2)

        // POST is not idempotent: the same situation is an error.
        // A GET first (retried the same way) leaves a pooled connection that
        // has served one request; the POST reuses it and meets the close.
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        await assertPocketError(.closedBeforeResponse) {
            try await client.send(PocketRequest(method: .post, url: url(server, "/"), body: .bytes(Data("x".utf8))))
        }
    }

    func testOnlyReplayableBodiesAreReSentOnANewConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { req in req.requestIndexOnConnection == 0 ? .text("ok") : .close }
        let client = try makeClient()
        let file = FileManager.default.temporaryDirectory.appending(path: "pocket-replay-\(UUID().uuidString)")
        try Data(BytePattern.bytes(seed: 2, range: 0..<100_000)).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        // A file body is replayable: the PUT meets the close and goes again, whole.
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        let put = try await client.send(PocketRequest(method: .put, url: url(server, "/"), body: .file(file)))
        XCTAssertEqual(put.status, 200)
        XCTAssertTrue(put.timings.retried)
        XCTAssertEqual(server.receivedRequests.last?.bodySHA256, BytePattern.sha256(seed: 2, size: 100_000))

        // A stream is one-shot: the same situation is an error of its own
        // (the connection's error as its cause), never a second send.
        let chunks = AsyncStream<Data> { c in c.yield(Data("abc".utf8)); c.finish() }
        let before = server.requestCount
        await assertPocketError(.bodyNotReplayable) {
            try await client.send(PocketRequest(method: .put, url: url(server, "/"), body: .stream(chunks, length: 3)))
        }
        XCTAssertEqual(server.requestCount, before + 1, "sent once")
    }

    func testConnectionCloseIsHonoured() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("bye", closeConnection: true) }
        let client = try makeClient()
        for _ in 0..<5 {
            let r = try await client.send(PocketRequest(url: url(server, "/")))
            XCTAssertEqual(r.text, "bye")
            XCTAssertFalse(r.timings.reusedConnection)
        }
        XCTAssertEqual(server.acceptedConnections, 5)
    }

    func testPerOriginCapIsNeverExceeded() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/slow") { _ in .raw([.sleep(milliseconds: 20), .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]) }
        let client = try makeClient { $0.maxConnectionsPerOrigin = 4 }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<40 {
                group.addTask { try await client.send(PocketRequest(url: url(server, "/slow"))).status }
            }
            for try await status in group { XCTAssertEqual(status, 200) }
        }
        XCTAssertLessThanOrEqual(server.maxConcurrentConnections, 4)
        XCTAssertEqual(server.acceptedConnections, 4)
        XCTAssertEqual(server.requestCount, 40)
    }

    func testExtraBytesAfterResponseDropTheConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE")]) }
        let client = try makeClient()
        for _ in 0..<3 {
            let r = try await client.send(PocketRequest(url: url(server, "/")))
            XCTAssertEqual(r.text, "ok")
        }
        XCTAssertEqual(server.acceptedConnections, 3, "a connection with stray bytes is never reused")
    }

    /// Over TLS the stray bytes come in a record of their own, right behind
    /// the response's (in the same segment): OpenSSL may hold them (read
    /// ahead) where the socket shows nothing, or leave them in the socket
    /// after a read of the response's record alone; either way the
    /// connection must not be pooled.
    func testExtraTLSRecordsAfterResponseDropTheConnection() async throws {
        let server = try TestServer(tls: try .localhost())
        defer { server.shutdown() }
        server.route("/") { _ in
            .raw([.sendTogether(["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"])])
        }
        let client = try makeClient { $0.tls.caFile = try! TestCertificates.shared.caCert }
        for _ in 0..<3 {
            let r = try await client.send(try PocketRequest("https://localhost:\(server.port)/"))
            XCTAssertEqual(r.text, "ok")
        }
        XCTAssertEqual(server.acceptedConnections, 3, "a connection with stray records is never reused")
    }

    func testIdleConnectionsExpire() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient { $0.idleConnectionTimeout = .milliseconds(100) }
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(server.openConnections, 1)
        await assertEventually("the engine closed the idle connection") { server.openConnections == 0 }
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(server.acceptedConnections, 2)
    }

    func testBytesArrivingOnAnIdleConnectionDropIt() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/late") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), .sleep(milliseconds: 50),
                  .sendString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")])
        }
        server.route("/") { _ in .text("fresh") }
        let client = try makeClient()
        let first = try await client.send(PocketRequest(url: url(server, "/late")))
        XCTAssertEqual(first.text, "ok")
        // The stray response lands on the pooled socket; the engine drops it
        // rather than hand it to the next request as its answer.
        await assertEventually("the engine closed the dirty idle connection") { server.openConnections == 0 }
        let next = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(next.text, "fresh")
        XCTAssertFalse(next.timings.reusedConnection)
    }
}
