import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

final class CancellationTests: XCTestCase {
    func testCancellingTheTaskMidBodyClosesTheConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in
            .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhalf"), .stall(milliseconds: 5000)])
        }
        let client = try makeClient()
        let task = Task { try await client.send(PocketRequest(url: url(server, "/"))) }
        await assertEventually("") { server.requestCount == 1 }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected cancellation")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .cancelled)
            XCTAssertTrue(error.isCancellation)
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        // The connection is closed, not pooled dirty: the server sees it go,
        // and the next request gets a fresh connection.
        await assertEventually("") { server.openConnections == 0 }
        server.route("/") { _ in .text("ok") }
        let r = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(r.text, "ok")
        XCTAssertEqual(server.acceptedConnections, 2)
    }

    func testCancelledBeforeStartNeverReachesTheServer() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.send(PocketRequest(url: url(server, "/")))
        }
        await assertPocketError(.cancelled) { try await task.value }
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(server.requestCount, 0)
    }

    func testCancellingAWaitingRequest() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 3000) }
        let client = try makeClient { $0.maxConnectionsPerOrigin = 1 }
        let first = Task { try await client.send(PocketRequest(url: url(server, "/"))) }
        await assertEventually("") { server.requestCount == 1 }
        let second = Task { try await client.send(PocketRequest(url: url(server, "/"))) }
        try await Task.sleep(for: .milliseconds(50))
        second.cancel()
        await assertPocketError(.cancelled) { try await second.value }
        first.cancel()
        await assertPocketError(.cancelled) { try await first.value }
    }
}
