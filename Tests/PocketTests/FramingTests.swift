import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Strict framing through a real socket: a bad or cut-short response is an
/// error with its own code, never a short body.
final class FramingTests: XCTestCase {
    private func expect(_ code: PocketError.Code, raw steps: [TestServer.RawStep],
                        file: StaticString = #filePath, line: UInt = #line) async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .raw(steps) }
        let client = try makeClient()
        await assertPocketError(code, file: file, line: line) { try await client.send(PocketRequest(url: url(server, "/"))) }
    }

    func testCloseBeforeContentLengthIsTruncatedBody() async throws {
        try await expect(.truncatedBody, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), .close])
    }

    func testMissingLastChunkIsTruncatedBody() async throws {
        try await expect(.truncatedBody, raw: [.sendString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"), .close])
    }

    func testCloseInHeadIsTruncatedHead() async throws {
        try await expect(.truncatedHead, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Le"), .close])
    }

    func testCloseWithoutResponse() async throws {
        try await expect(.closedBeforeResponse, raw: [.close])
    }

    func testResetIsConnectionReset() async throws {
        try await expect(.connectionReset, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"), .sleep(milliseconds: 20), .reset])
    }

    func testTransferEncodingWithContentLength() async throws {
        try await expect(.transferEncodingWithContentLength, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")])
    }

    func testBadAndConflictingContentLength() async throws {
        try await expect(.badContentLength, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc")])
        try await expect(.badContentLength, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nabc")])
        try await expect(.conflictingContentLength, raw: [.sendString("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc")])
    }

    func testBadChunkAndLimits() async throws {
        try await expect(.badChunk, raw: [.sendString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")])
        try await expect(.chunkSizeTooLong, raw: [.sendString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000001\r\na\r\n0\r\n\r\n")])
        let bigHead = "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Fill: " + String(repeating: "a", count: 1000) + "\r\n", count: 70)
        try await expect(.responseHeadTooLarge, raw: [.sendString(bigHead)])
        let many = "HTTP/1.1 200 OK\r\n" + (0..<129).map { "X-\($0): v\r\n" }.joined() + "Content-Length: 0\r\n\r\n"
        try await expect(.tooManyHeaders, raw: [.sendString(many)])
    }

    func testGarbageStatusLineAndVersion() async throws {
        try await expect(.badStatusLine, raw: [.sendString("HTTX/1.1 200 OK\r\n\r\n")])
        try await expect(.unsupportedVersion, raw: [.sendString("HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n")])
        try await expect(.unexpectedUpgrade, raw: [.sendString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")])
    }

    func testTricklingHeadAndBodyByteByByte() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let body = String(repeating: "0123456789", count: 20)
        let response = "HTTP/1.1 200 OK\r\nX-Long: \(String(repeating: "v", count: 300))\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "64\r\n\(body.prefix(100))\r\n64;ext=1\r\n\(body.suffix(100))\r\n0\r\nX-T: 1\r\n\r\n"
        server.route("/") { _ in .raw([.trickle(Array(response.utf8), chunkSize: 1, delayMilliseconds: 0)]) }
        let client = try makeClient()
        let r = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(r.text, body)
    }

    func testBodyLimit() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/big") { _ in .response(body: Array(repeating: 1, count: 5000)) }
        server.route("/bigchunked") { _ in .chunked(chunks: Array(repeating: Array(repeating: 1, count: 1000), count: 5)) }
        let client = try makeClient { $0.limits.maxBodyBytes = 4096 }
        await assertPocketError(.bodyTooLarge) { try await client.send(PocketRequest(url: url(server, "/big"))) }
        await assertPocketError(.bodyTooLarge) { try await client.send(PocketRequest(url: url(server, "/bigchunked"))) }
    }
}
