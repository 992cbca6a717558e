import CHTTPEngine
import XCTest

// pk_response_body_info: message body framing (RFC 9112 §6.3) and
// persistence (§9.3), applied to heads parsed by pk_parse_response_head.
final class BodyInfoTests: XCTestCase {
  private func head(_ status: String = "HTTP/1.1 200 OK", _ fields: String...) -> String {
    status + "\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"
  }

  private func assertFraming(_ text: String, headRequest: Bool = false, _ framing: pk_framing,
                             length: UInt64 = 0, keepAlive: Bool,
                             file: StaticString = #filePath, line: UInt = #line) {
    let (r, info) = bodyInfo(text, headRequest: headRequest, file: file, line: line)
    XCTAssertEqual(r, 0, resultName(Int(r)), file: file, line: line)
    XCTAssertEqual(info.framing, framing, text.debugDescription, file: file, line: line)
    if framing == PK_FRAMING_LENGTH { XCTAssertEqual(info.content_length, length, file: file, line: line) }
    XCTAssertEqual(info.keep_alive, keepAlive ? 1 : 0, text.debugDescription, file: file, line: line)
  }

  private func assertFramingError(_ text: String, _ error: pk_error,
                                  file: StaticString = #filePath, line: UInt = #line) {
    let (r, _) = bodyInfo(text, file: file, line: line)
    XCTAssertEqual(resultName(Int(r)), resultName(Int(code(error))), text.debugDescription,
                   file: file, line: line)
  }

  func testContentLength() {
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length: 5"), PK_FRAMING_LENGTH, length: 5, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "content-LENGTH: 0"), PK_FRAMING_LENGTH, length: 0, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length: 007"), PK_FRAMING_LENGTH, length: 7, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length: 9223372036854775807"), PK_FRAMING_LENGTH,
                  length: UInt64(Int64.max), keepAlive: true)
    // OWS around the value is not part of it (RFC 9112 §5.1).
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length:  5 \t"), PK_FRAMING_LENGTH, length: 5, keepAlive: true)
  }

  func testDuplicateContentLengths() {
    // Repeats of one value are one value (RFC 9110 §8.6).
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length: 42, 42"), PK_FRAMING_LENGTH, length: 42, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length: 42", "X: y", "Content-Length: 42"), PK_FRAMING_LENGTH,
                  length: 42, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Content-Length: 42,42", "Content-Length: 042"), PK_FRAMING_LENGTH,
                  length: 42, keepAlive: true)
    assertFramingError(head("HTTP/1.1 200 OK", "Content-Length: 42, 43"), PK_E_CONFLICTING_CONTENT_LENGTH)
    assertFramingError(head("HTTP/1.1 200 OK", "Content-Length: 4", "Content-Length: 5"),
                       PK_E_CONFLICTING_CONTENT_LENGTH)
  }

  func testMalformedContentLength() {
    for v in ["+5", "-5", "0x10", "5 5", "4 2", "5.0", "1e3", "abc", "", "5,", ", 5", "5,,5", "99999999999999999999",
              "9223372036854775808", "18446744073709551616", "\u{661}"] {
      assertFramingError(head("HTTP/1.1 200 OK", "Content-Length: " + v), PK_E_BAD_CONTENT_LENGTH)
    }
    // A bad value in a later field is found too.
    assertFramingError(head("HTTP/1.1 200 OK", "Content-Length: 5", "Content-Length: x"), PK_E_BAD_CONTENT_LENGTH)
  }

  func testChunked() {
    assertFraming(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked"), PK_FRAMING_CHUNKED, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Transfer-Encoding: CHUNKED"), PK_FRAMING_CHUNKED, keepAlive: true)
    // Empty list elements are ignored (RFC 9110 §5.6.1).
    assertFraming(head("HTTP/1.1 200 OK", "Transfer-Encoding: , chunked ,"), PK_FRAMING_CHUNKED, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Transfer-Encoding:", "Transfer-Encoding: chunked"), PK_FRAMING_CHUNKED,
                  keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Connection: close"), PK_FRAMING_CHUNKED,
                  keepAlive: false)
  }

  func testTransferEncodingWithContentLength() {
    assertFramingError(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Length: 5"),
                       PK_E_TE_WITH_CONTENT_LENGTH)
    assertFramingError(head("HTTP/1.1 200 OK", "Content-Length: 5", "Transfer-Encoding: chunked"),
                       PK_E_TE_WITH_CONTENT_LENGTH)
    assertFramingError(head("HTTP/1.1 200 OK", "Content-Length: x", "Transfer-Encoding: gzip"),
                       PK_E_TE_WITH_CONTENT_LENGTH)
  }

  func testUnsupportedTransferEncodings() {
    for te in [["gzip"], ["gzip, chunked"], ["chunked, gzip"], ["identity"], ["chunked, chunked"],
               ["chunked", "chunked"], ["gzip", "chunked"], [""], [" , "], ["chunked;x=1"], ["chunkedx"]] {
      assertFramingError(head("HTTP/1.1 200 OK", te.map { "Transfer-Encoding: " + $0 }),
                         PK_E_UNSUPPORTED_TRANSFER_ENCODING)
    }
  }

  private func head(_ status: String, _ fields: [String]) -> String {
    status + "\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"
  }

  func testNoBody() {
    let framing = ["Content-Length: 100", "Transfer-Encoding: chunked", "Content-Length: bogus"]
    for f in framing {
      for status in ["HTTP/1.1 100 Continue", "HTTP/1.1 101 Switching", "HTTP/1.1 103 Early Hints",
                     "HTTP/1.1 204 No Content", "HTTP/1.1 304 Not Modified"] {
        assertFraming(head(status, f), PK_FRAMING_NONE, keepAlive: true)
      }
      assertFraming(head("HTTP/1.1 200 OK", f), headRequest: true, PK_FRAMING_NONE, keepAlive: true)
      assertFraming(head("HTTP/1.1 404 Not Found", f), headRequest: true, PK_FRAMING_NONE, keepAlive: true)
    }
    assertFraming(head("HTTP/1.1 204 No Content", "Connection: close"), PK_FRAMING_NONE, keepAlive: false)
    assertFraming(head("HTTP/1.0 304 Not Modified"), PK_FRAMING_NONE, keepAlive: false)
    assertFraming(head("HTTP/1.0 200 OK", "Connection: keep-alive"), headRequest: true, PK_FRAMING_NONE,
                  keepAlive: true)
  }

  func testReadUntilClose() {
    assertFraming(head("HTTP/1.1 200 OK"), PK_FRAMING_CLOSE, keepAlive: false)
    assertFraming(head("HTTP/1.1 200 OK", "Connection: keep-alive"), PK_FRAMING_CLOSE, keepAlive: false)
    assertFraming(head("HTTP/1.0 200 OK", "Connection: keep-alive"), PK_FRAMING_CLOSE, keepAlive: false)
    assertFraming(head("HTTP/1.1 500 Oops"), PK_FRAMING_CLOSE, keepAlive: false)
  }

  func testHTTP11Persistence() {
    let cl = "Content-Length: 1"
    assertFraming(head("HTTP/1.1 200 OK", cl), PK_FRAMING_LENGTH, length: 1, keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", cl, "Connection: close"), PK_FRAMING_LENGTH, length: 1, keepAlive: false)
    assertFraming(head("HTTP/1.1 200 OK", cl, "Connection: CLOSE"), PK_FRAMING_LENGTH, length: 1, keepAlive: false)
    assertFraming(head("HTTP/1.1 200 OK", cl, "connection: Keep-Alive, Close"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: false)
    assertFraming(head("HTTP/1.1 200 OK", cl, "Connection: upgrade", "Connection:  close "), PK_FRAMING_LENGTH,
                  length: 1, keepAlive: false)
    assertFraming(head("HTTP/1.1 200 OK", cl, "Connection: closed, x-close"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: true)
    assertFraming(head("HTTP/1.1 200 OK", cl, "X-Connection: close"), PK_FRAMING_LENGTH, length: 1, keepAlive: true)
  }

  func testHTTP10Persistence() {
    let cl = "Content-Length: 1"
    assertFraming(head("HTTP/1.0 200 OK", cl), PK_FRAMING_LENGTH, length: 1, keepAlive: false)
    assertFraming(head("HTTP/1.0 200 OK", cl, "Connection: keep-alive"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: true)
    assertFraming(head("HTTP/1.0 200 OK", cl, "Connection: Keep-Alive"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: true)
    assertFraming(head("HTTP/1.0 200 OK", cl, "Connection: foo ,keep-alive"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: true)
    assertFraming(head("HTTP/1.0 200 OK", cl, "Connection: keep-alive, close"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: false)
    assertFraming(head("HTTP/1.0 200 OK", cl, "Connection: keep-alive", "Connection: close"), PK_FRAMING_LENGTH,
                  length: 1, keepAlive: false)
    assertFraming(head("HTTP/1.0 200 OK", cl, "Keep-Alive: timeout=5"), PK_FRAMING_LENGTH, length: 1,
                  keepAlive: false)
    // Transfer-Encoding in HTTP/1.0 means faulty framing (RFC 9112 §6.1):
    // decoded, but the connection is not reused.
    assertFraming(head("HTTP/1.0 200 OK", "Transfer-Encoding: chunked", "Connection: keep-alive"),
                  PK_FRAMING_CHUNKED, keepAlive: false)
  }

  func testHeadWithoutFields() {
    var h = pk_response_head()
    h.minor_version = 1
    h.status = 200
    var info = pk_body_info()
    XCTAssertEqual(pk_response_body_info(&h, 0, &info), 0)
    XCTAssertEqual(info.framing, PK_FRAMING_CLOSE)
    XCTAssertEqual(info.keep_alive, 0)
  }
}
