import Foundation
import PocketTestSupport
import XCTest

/// Tests of the nginx fixture itself, through plain sockets. Skipped when
/// nginx is not installed.
final class NginxFixtureTests: XCTestCase {
    private var nginx: NginxFixture!

    override func setUpWithError() throws {
        try requireTool(NginxFixture.isAvailable, "nginx is not installed (apt-get install nginx-light)")
        nginx = try NginxFixture()
    }

    override func tearDown() {
        nginx?.stop()
        nginx = nil
    }

    func testServesSmallOverKeepAlive() throws {
        let socket = try LoopbackRawClient(port: nginx.port)
        for _ in 0..<3 {
            socket.send("GET /small HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = try XCTUnwrap(socket.readResponse())
            XCTAssertTrue(response.head.hasPrefix("HTTP/1.1 200 OK\r\n"), response.head)
            XCTAssertTrue(response.head.contains("Content-Length: 13\r\n"), response.head)
            XCTAssertEqual(response.body, NginxFixture.smallBody)
            XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "Hello, World!")
        }
    }

    func testServesLarge() throws {
        let socket = try LoopbackRawClient(port: nginx.port)
        socket.send("GET /large HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try XCTUnwrap(socket.readResponse())
        XCTAssertEqual(response.body.count, 4 * 1024 * 1024)
        XCTAssertTrue(response.body == NginxFixture.largeBody)
    }

    func testChunkedShtmlIsSentChunked() throws {
        let socket = try LoopbackRawClient(port: nginx.port)
        socket.send("GET /chunked.shtml HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        let (bytes, error) = socket.readToEOF()
        XCTAssertNil(error)
        let separator = try XCTUnwrap(bytes.firstRange(of: Array("\r\n\r\n".utf8)))
        let head = String(decoding: bytes[..<separator.lowerBound], as: UTF8.self)
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        XCTAssertTrue(head.lowercased().contains("transfer-encoding: chunked"), head)
        XCTAssertFalse(head.lowercased().contains("content-length"), head)
        let decoded = try XCTUnwrap(Self.dechunk(Array(bytes[separator.upperBound...])))
        XCTAssertEqual(String(decoding: decoded, as: UTF8.self), String(decoding: NginxFixture.chunkedBody, as: UTF8.self))
    }

    func testMissingFileIs404AndStopRemovesEverything() throws {
        let socket = try LoopbackRawClient(port: nginx.port)
        socket.send("GET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertTrue(try XCTUnwrap(socket.readResponse()).head.hasPrefix("HTTP/1.1 404 "))
        socket.close()

        let directory = nginx.directory
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.path))
        nginx.stop()
        nginx.stop()
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path))
        XCTAssertThrowsError(try LoopbackRawClient(port: nginx.port), "nginx is gone")
    }

    /// Decodes a complete chunked body (sizes, data, last chunk, trailers);
    /// nil if malformed or incomplete.
    private static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var body: [UInt8] = []
        var index = 0
        let crlf: [UInt8] = [13, 10]
        while true {
            guard let lineEnd = bytes[index...].firstRange(of: crlf) else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else { return nil }
            index = lineEnd.upperBound
            if size == 0 {
                // Optional trailers, then the empty line.
                while true {
                    guard let end = bytes[index...].firstRange(of: crlf) else { return nil }
                    if end.lowerBound == index { return end.upperBound == bytes.count ? body : nil }
                    index = end.upperBound
                }
            }
            guard index + size + 2 <= bytes.count, Array(bytes[(index + size)..<(index + size + 2)]) == crlf else {
                return nil
            }
            body += bytes[index..<(index + size)]
            index += size + 2
        }
    }
}
