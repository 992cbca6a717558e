import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `Configuration.ioBackend` through real sockets: which backend a client
/// gets, that its writes go where it says, and that requests are answered
/// the same on both. (Refusal by a seccomp filter is `ctests/c/test_ring.c`:
/// a filter cannot be put on one part of this process.)
final class IOBackendTests: XCTestCase {
    /// Whether this kernel gives a process io_uring (the sysctl; a seccomp
    /// filter would also show as the `.ioUring` client's init failing).
    private var kernelAllowsIOUring: Bool {
        let value = (try? String(contentsOfFile: "/proc/sys/kernel/io_uring_disabled", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return value == nil || value == "0"
    }

    /// 64 requests at once, each body checked.
    private func sendConcurrently(_ client: PocketClient, _ server: TestServer, tls: Bool = false) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let target = tls ? try PocketRequest("https://localhost:\(server.port)/echo/\(i)")
                                     : PocketRequest(url: url(server, "/echo/\(i)"))
                    let response = try await client.send(target)
                    XCTAssertEqual(response.status, 200)
                    XCTAssertEqual(response.text, "/echo/\(i)")
                }
            }
            try await group.waitForAll()
        }
    }

    private func echoServer() throws -> TestServer {
        let server = try TestServer()
        server.defaultHandler = { request in .text(request.target) }
        return server
    }

    func testEpollWritesEveryRequestItself() async throws {
        let server = try echoServer()
        defer { server.shutdown() }
        let client = try makeClient { $0.ioBackend = .epoll }
        defer { Task { try? await client.shutdown() } }
        try await sendConcurrently(client, server)
        let stats = client.poolStatistics
        XCTAssertEqual(client.ioBackend, .epoll)
        XCTAssertEqual(stats.ringWrites, 0)
        XCTAssertEqual(stats.ringSubmits, 0)
    }

    func testIOUringBatchesTheWritesOfAPass() async throws {
        let server = try echoServer()
        defer { server.shutdown() }
        let client: PocketClient
        do {
            client = try makeClient { $0.ioBackend = .ioUring }
        } catch let error as PocketError where error.code == .ioUringUnavailable {
            XCTAssertFalse(kernelAllowsIOUring, "the kernel allows io_uring, yet the client could not have it: \(error)")
            XCTAssertTrue(error.message.contains("io_uring"), error.message)
            return
        }
        defer { Task { try? await client.shutdown() } }
        try await sendConcurrently(client, server)
        try await sendConcurrently(client, server)
        let stats = client.poolStatistics
        XCTAssertEqual(client.ioBackend, .ioUring)
        XCTAssertGreaterThan(stats.ringWrites, 0, "requests written by the loop went through the ring")
        XCTAssertLessThanOrEqual(stats.ringSubmits, stats.ringWrites)
        XCTAssertEqual(server.requestCount, 128)
    }

    /// TLS heads go through the ring too: their records are sealed into the
    /// connection and queued with the pass's other writes.
    func testIOUringWritesTLSRecords() async throws {
        let server = try TestServer(tls: try .localhost())
        server.defaultHandler = { request in .text(request.target) }
        defer { server.shutdown() }
        let client: PocketClient
        do {
            client = try makeClient {
                $0.ioBackend = .ioUring
                $0.tls.caFile = try! TestCertificates.shared.caCert
            }
        } catch let error as PocketError where error.code == .ioUringUnavailable {
            XCTAssertFalse(kernelAllowsIOUring, "the kernel allows io_uring, yet the client could not have it: \(error)")
            return
        }
        defer { Task { try? await client.shutdown() } }
        try await sendConcurrently(client, server, tls: true)
        let before = client.poolStatistics.ringWrites
        try await sendConcurrently(client, server, tls: true)
        let stats = client.poolStatistics
        XCTAssertGreaterThan(stats.ringWrites, before, "TLS requests written by the loop went through the ring")
        XCTAssertLessThanOrEqual(stats.ringSubmits, stats.ringWrites)
        XCTAssertEqual(server.requestCount, 128)
    }

    func testAutomaticIsIOUringWhereTheKernelAllowsIt() async throws {
        let server = try echoServer()
        defer { server.shutdown() }
        let client = try makeClient { $0.ioBackend = .automatic }
        defer { Task { try? await client.shutdown() } }
        try await sendConcurrently(client, server)
        let ringClient = try? makeClient { $0.ioBackend = .ioUring }
        XCTAssertEqual(client.ioBackend, ringClient == nil ? .epoll : .ioUring,
                       "automatic picks io_uring exactly when an io_uring client can be made")
        if let ringClient { try await ringClient.shutdown() }
    }

    func testBackendNamesAreThoseOfTheEnvironmentVariable() {
        XCTAssertEqual(PocketIOBackend(rawValue: "auto"), .automatic)
        XCTAssertEqual(PocketIOBackend(rawValue: "epoll"), .epoll)
        XCTAssertEqual(PocketIOBackend(rawValue: "io_uring"), .ioUring)
        XCTAssertNil(PocketIOBackend(rawValue: "uring"))
        let named = ProcessInfo.processInfo.environment["POCKET_IO_BACKEND"].flatMap(PocketIOBackend.init(rawValue:))
        XCTAssertEqual(PocketClient.Configuration().ioBackend, named ?? .automatic)
    }
}
