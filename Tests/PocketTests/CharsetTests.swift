import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketResponse.text` and `decodedText()` follow the `Content-Type` charset
/// (RFC 9110 §8.3.2), UTF-8 when there is none.
final class CharsetTests: XCTestCase {
    var server: TestServer!
    var client: PocketClient!

    override func setUp() async throws {
        server = try TestServer()
        client = try makeClient()
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        // XCTest keeps every test case object alive to the end of the run:
        // drop the client so its engine threads are joined now.
        client = nil
        server = nil
    }

    /// Serves `body` with `contentType` (none if nil) and returns the response.
    func fetch(_ body: [UInt8], _ contentType: String?) async throws -> PocketResponse {
        server.route("/t") { _ in .response(headers: contentType.map { [("Content-Type", $0)] } ?? [], body: body) }
        return try await client.send(PocketRequest(url: url(server, "/t")))
    }

    func testEachSupportedCharsetDecodes() async throws {
        let cases: [(String?, [UInt8], String)] = [
            (nil, Array("naïve ✓".utf8), "naïve ✓"),
            ("application/json", Array("{\"a\":\"é\"}".utf8), "{\"a\":\"é\"}"),
            ("text/plain; charset=utf-8", Array("ünïcödé".utf8), "ünïcödé"),
            ("text/plain; charset=\"UTF-8\"", Array("quoted".utf8), "quoted"),
            ("text/plain; charset=us-ascii", Array("plain".utf8), "plain"),
            ("text/html; charset=ISO-8859-1", [0x63, 0x61, 0x66, 0xE9], "café"),
            ("text/plain;charset=windows-1252", [0x80, 0x20, 0x93, 0x71, 0x94, 0x20, 0x97], "€ “q” —"),
            ("text/plain; charset=utf-16", [0xFF, 0xFE, 0x68, 0x00, 0xE9, 0x00], "hé"),
            ("text/plain; charset=utf-16", [0x00, 0x68, 0x00, 0xE9], "hé"),
            ("text/plain; charset=utf-16le", [0x68, 0x00, 0x3D, 0xD8, 0x00, 0xDE], "h😀"),
            ("text/plain; charset=utf-16be", [0x00, 0x68, 0xD8, 0x3D, 0xDE, 0x00], "h😀"),
        ]
        for (type, bytes, expected) in cases {
            let response = try await fetch(bytes, type)
            XCTAssertEqual(try response.decodedText(), expected, "\(type ?? "no Content-Type")")
            XCTAssertEqual(response.text, expected, "\(type ?? "no Content-Type")")
        }
    }

    func testInvalidBytesAndUnknownCharsetsAreErrorsInDecodedTextOnly() async throws {
        let cases: [(String, [UInt8])] = [
            ("text/plain; charset=utf-8", [0x61, 0xFF, 0x62]),
            ("text/plain; charset=us-ascii", [0x61, 0xE9]),
            ("text/plain; charset=windows-1252", [0x81]),
            ("text/plain; charset=utf-16le", [0x61, 0x00, 0x62]),
            ("text/plain; charset=utf-16be", [0xDC, 0x00]),
            ("text/plain; charset=koi8-r", [0xC1]),
        ]
        for (type, bytes) in cases {
            let response = try await fetch(bytes, type)
            await assertPocketError(.unsupportedCharset) { try response.decodedText() }
            XCTAssertFalse(response.text.isEmpty, "text repairs instead of failing: \(type)")
        }
        let utf8 = try await fetch([0x61, 0xFF, 0x62], "text/plain")
        XCTAssertEqual(utf8.text, "a\u{FFFD}b", "no charset: UTF-8 with replacement characters")
        XCTAssertNil(utf8.charset)
    }
}
