import CHTTPEngine
import XCTest

// pk_parse_response_head. Every case goes through assertHead/assertHeadError,
// which feed the input whole, byte by byte with the resume hint, and split
// in two at every offset, and require the same outcome each time.
final class ResponseHeadParserTests: XCTestCase {
  func testLimitsDefaults() {
    let l = defaultLimits()
    XCTAssertEqual(l.max_head_bytes, 65536)
    XCTAssertEqual(l.max_header_fields, 128)
    XCTAssertEqual(l.max_chunk_hex_digits, 16)
    XCTAssertEqual(l.max_chunk_ext_bytes, 4096)
    XCTAssertEqual(l.max_trailer_bytes, 16384)
  }

  func testSimpleResponse() {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"
    let o = assertHead(head + "hello")
    XCTAssertEqual(Int(o.result), head.utf8.count)
    XCTAssertEqual(o.status, 200)
    XCTAssertEqual(o.minorVersion, 1)
    XCTAssertEqual(o.reasonString, "OK")
    XCTAssertEqual(o.reasonOffset, 13)
    XCTAssertEqual(o.fields.map(\.nameString), ["Content-Type", "Content-Length"])
    XCTAssertEqual(o.fields.map(\.valueString), ["text/plain", "5"])
    XCTAssertEqual(o.raw, bytes(head))
  }

  func testHTTP10AndStatusRange() {
    let o = assertHead("HTTP/1.0 404 Not Found\r\n\r\n")
    XCTAssertEqual(o.minorVersion, 0)
    XCTAssertEqual(o.status, 404)
    XCTAssertEqual(o.reasonString, "Not Found")
    XCTAssertEqual(o.fields, [])
    XCTAssertEqual(assertHead("HTTP/1.1 100 Continue\r\n\r\n").status, 100)
    XCTAssertEqual(assertHead("HTTP/1.1 999 Whatever\r\n\r\n").status, 999)
  }

  func testMissingAndEmptyReason() {
    let missing = assertHead("HTTP/1.1 204\r\nDate: x\r\n\r\n")
    XCTAssertEqual(missing.status, 204)
    XCTAssertEqual(missing.reason, [])
    XCTAssertEqual(missing.value("date"), "x")
    let empty = assertHead("HTTP/1.1 304 \r\n\r\n")
    XCTAssertEqual(empty.status, 304)
    XCTAssertEqual(empty.reason, [])
    XCTAssertEqual(Int(empty.result), 17)
  }

  func testReasonMayHoldTabsSpacesAndObsText() {
    let input = bytes("HTTP/1.1 200 Very\tOK  ") + [0xC3, 0xA9, 0xFF] + bytes("\r\n\r\n")
    let o = assertHead(input)
    XCTAssertEqual(o.reason, bytes("Very\tOK  ") + [0xC3, 0xA9, 0xFF])
  }

  func testValuesAreTrimmedOfOWS() {
    let o = assertHead("HTTP/1.1 200 OK\r\nA:  \t v a l \t \r\nB:x\r\nC:\r\nD: \t \r\n\r\n")
    XCTAssertEqual(o.fields.map(\.valueString), ["v a l", "x", "", ""])
  }

  func testTokenNamesAndObsTextValues() {
    let input = bytes("HTTP/1.1 200 OK\r\n!#$%&'*+-.^_`|~09azAZ: ") + [0x80, 0xFE, 0x20, 0x41]
      + bytes("\r\n\r\n")
    let o = assertHead(input)
    XCTAssertEqual(o.fields.first?.nameString, "!#$%&'*+-.^_`|~09azAZ")
    XCTAssertEqual(o.fields.first?.value, [0x80, 0xFE, 0x20, 0x41])
  }

  func testBytesAfterTheHeadAreNotPartOfIt() {
    let o = assertHead("HTTP/1.1 200 OK\r\nX: y\r\n\r\nHTTP/1.1 200 OK\r\n\r\n")
    XCTAssertEqual(Int(o.result), 25)
  }

  func testIncompleteHead() {
    for text in ["", "H", "HTTP/1.1", "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nA: b\r\n\r"] {
      XCTAssertEqual(assertHead(text).result, PK_PARSE_INCOMPLETE, text.debugDescription)
    }
  }

  func testObsFoldIsUnfoldedInPlace() {
    let head = "HTTP/1.1 200 OK\r\nX-Fold: a\r\n  b\r\n\tc \r\nNext: n\r\n\r\n"
    let o = assertHead(head)
    // CR, LF and the leading whitespace each become one SP.
    XCTAssertEqual(o.value("x-fold"), "a    b   c")
    XCTAssertEqual(o.value("next"), "n")
    XCTAssertEqual(o.fields.count, 2)
    XCTAssertEqual(o.raw, bytes("HTTP/1.1 200 OK\r\nX-Fold: a    b   c \r\nNext: n\r\n\r\n"))
    XCTAssertEqual(Int(o.result), head.utf8.count)
  }

  func testObsFoldOntoAnEmptyValue() {
    let o = assertHead("HTTP/1.1 200 OK\r\nX:\r\n   first\r\nY: y\r\n \r\n\r\n")
    XCTAssertEqual(o.value("x"), "first")
    XCTAssertEqual(o.value("y"), "y")  // a whitespace-only continuation adds nothing
  }

  func testReparsingAnUnfoldedHeadGivesTheSameHead() {
    var input = bytes("HTTP/1.1 200 OK\r\nA: 1\r\n 2\r\nB:\r\n\t\r\n\r\n")
    var lim = defaultLimits()
    var first: [String] = []
    for _ in 0..<2 {
      var hdrs = [pk_header](repeating: pk_header(), count: 8)
      let got: [String] = input.withUnsafeMutableBufferPointer { raw in
        raw.withMemoryRebound(to: CChar.self) { buf in
          hdrs.withUnsafeMutableBufferPointer { hp in
            var h = pk_response_head()
            h.headers = hp.baseAddress
            h.num_headers = hp.count
            let r = pk_parse_response_head(buf.baseAddress, buf.count, 0, &h, &lim)
            XCTAssertEqual(Int(r), buf.count)
            return (0..<h.num_headers).map { i in
              let f = hp[i]
              let base = UnsafePointer(buf.baseAddress!)
              return "\(f.name! - base)/\(f.value! - base)/\(f.value_len)"
            }
          }
        }
      }
      if first.isEmpty { first = got } else { XCTAssertEqual(got, first) }
    }
  }

  func testBadVersion() {
    for v in ["HTTP/2 200 OK", "HTTP/2.0 200 OK", "HTTP/1.2 200 OK", "http/1.1 200 OK", "Http/1.0 200 OK",
              "HTTP/1.10 200 OK", "HTTP/1 200 OK", "HTTP/ 200 OK", "HTTP/0.9 200 OK"] {
      assertHeadError(v + "\r\n\r\n", PK_E_BAD_VERSION)
    }
  }

  func testBadStatusLine() {
    let lines = [
      "<html><body>nope</body></html>", "HTTPS/1.1 200 OK", "ICY 200 OK", "HTTP/1.1", "HTTP/1.1 ",
      "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 2x0 OK", "HTTP/1.1  200 OK", "HTTP/1.1\t200 OK",
      "HTTP/1.1 099 Low", "HTTP/1.1 200\tOK", "HTTP/1.1 200 O\u{01}K", "HTTP/1.1 200 O\u{7F}K",
      "HTTP/1.1 200 O\0K", "HTTP/1.1 200 O\rK", " HTTP/1.1 200 OK", "",
    ]
    for l in lines { assertHeadError(l + "\r\n\r\n", PK_E_BAD_STATUS_LINE) }
  }

  func testNonHTTPFailsBeforeTheHeadEnds() {
    // No CRLFCRLF anywhere: the first bytes already show it is not HTTP.
    assertHeadError("<!DOCTYPE html>", PK_E_BAD_STATUS_LINE)
    assertHeadError("\u{16}\u{03}\u{01}", PK_E_BAD_STATUS_LINE)  // a TLS record
  }

  func testBareLineEndingsFailWithoutWaitingForTheEnd() {
    // A head with bare LFs never contains CRLFCRLF: it must fail at once.
    assertHeadError("HTTP/1.1 200 OK\nContent-Length: 0\n\n", PK_E_BAD_STATUS_LINE)
    assertHeadError("HTTP/1.1 200 OK\nX", PK_E_BAD_STATUS_LINE)
    assertHeadError("HTTP/1.1 200 OK\r\nA: b\nB: c\n\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\nA: b\r\n\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\n\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\nA: b\r\r\n\r\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\nA: b\r\n\rX", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 O\rK\r\n\r\n", PK_E_BAD_STATUS_LINE)
    // The first bad line decides, even if a later one is bad differently.
    var lim = defaultLimits()
    lim.max_header_fields = 1
    assertHeadError("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC\n", PK_E_TOO_MANY_HEADERS, limits: lim)
  }

  func testBadHeaderLines() {
    let lines = [
      "Content-Length : 5",  // whitespace before the colon (RFC 9112 §5.1)
      "Content-Length\t: 5", "No-Colon", ": empty-name", " : x", "Bad Name: x", "Bad@Name: x",
      "Bad\"Name: x", "X: a\0b", "X: a\u{01}b", "X: a\u{7F}b", "X: a\u{1B}b", "Ünicode: x",
    ]
    for l in lines { assertHeadError("HTTP/1.1 200 OK\r\n" + l + "\r\n\r\n", PK_E_BAD_HEADER) }
    assertHeadError(bytes("HTTP/1.1 200 OK\r\nX") + [0x80] + bytes(": y\r\n\r\n"), PK_E_BAD_HEADER)
  }

  func testObsFoldRightAfterTheStatusLineIsAnError() {
    assertHeadError("HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\n\tX: y\r\nA: b\r\n\r\n", PK_E_BAD_HEADER)
    assertHeadError("HTTP/1.1 200 OK\r\nA: b\r\n bad\u{01}\r\n\r\n", PK_E_BAD_HEADER)
  }

  private func head(fields n: Int) -> String {
    "HTTP/1.1 200 OK\r\n" + (0..<n).map { "X-Field-\($0): value \($0)\r\n" }.joined() + "\r\n"
  }

  func testHeaderFieldsAtTheLimitAndOneOver() {
    let o = assertHead(bytes(head(fields: 128)), maxSplits: 64)
    XCTAssertEqual(o.fields.count, 128)
    XCTAssertEqual(o.fields.last?.nameString, "X-Field-127")
    XCTAssertEqual(o.fields.last?.valueString, "value 127")
    assertHeadError(bytes(head(fields: 129)), PK_E_TOO_MANY_HEADERS, maxSplits: 64)
  }

  func testSmallerCapacityOrLimitApplies() {
    XCTAssertEqual(assertHead(head(fields: 4), capacity: 4).fields.count, 4)
    assertHeadError(head(fields: 5), PK_E_TOO_MANY_HEADERS, capacity: 4)
    var lim = defaultLimits()
    lim.max_header_fields = 2
    XCTAssertEqual(assertHead(head(fields: 2), limits: lim).fields.count, 2)
    assertHeadError(head(fields: 3), PK_E_TOO_MANY_HEADERS, limits: lim)
    // Folds are not fields.
    XCTAssertEqual(assertHead("HTTP/1.1 200 OK\r\nA: 1\r\n 2\r\nB: 3\r\n\r\n", limits: lim).fields.count, 2)
    lim.max_header_fields = 0
    XCTAssertEqual(assertHead("HTTP/1.1 200 OK\r\n\r\n", limits: lim).result, 19)
  }

  /// A head of exactly `size` bytes: one long field padded to fit.
  private func head(size: Int) -> [UInt8] {
    let start = "HTTP/1.1 200 OK\r\nX-Pad: "
    let end = "\r\n\r\n"
    return bytes(start + String(repeating: "p", count: size - start.utf8.count - end.utf8.count) + end)
  }

  func testHeadAtExactlyTheSizeLimitAndOver() {
    let exact = head(size: 65536)
    let o = assertHead(exact, maxSplits: 16)
    XCTAssertEqual(Int(o.result), 65536)
    assertHeadError(head(size: 65537), PK_E_HEAD_TOO_LARGE, maxSplits: 16)
    // Incomplete and already at the limit: it can never fit.
    assertHeadError(Array(exact.dropLast(4)) + bytes("abcd"), PK_E_HEAD_TOO_LARGE, maxSplits: 16)
    XCTAssertEqual(assertHead(Array(exact.dropLast(2)), maxSplits: 16).result, PK_PARSE_INCOMPLETE)

    var lim = defaultLimits()
    lim.max_head_bytes = 40
    XCTAssertEqual(Int(assertHead(head(size: 40), limits: lim).result), 40)
    assertHeadError(head(size: 41), PK_E_HEAD_TOO_LARGE, limits: lim)
    assertHeadError(bytes("HTTP/1.1 200 OK\r\n") + Array(repeating: UInt8(ascii: "a"), count: 23),
                    PK_E_HEAD_TOO_LARGE, limits: lim)
  }

  /// A trickling server: a 60 KiB head, one byte per call. The resume hint
  /// means each call scans only the new byte (plus three before it), so the
  /// whole head costs O(n). That is checked without clocks: after the first
  /// calls, a bare LF is planted in bytes already scanned. A parser that
  /// rescanned from the start would report it; one that honours the hint
  /// never looks there again. The byte is restored before the last call,
  /// which parses the complete head.
  func testTricklingHeadIsScannedOnce() {
    var input = bytes("HTTP/1.1 200 OK\r\n")
    var i = 0
    while input.count < 60 * 1024 {
      input += bytes("X-Trickle-\(i): \(String(repeating: "v", count: 40))\r\n")
      i += 1
    }
    input += bytes("\r\n")
    let n = input.count
    let buf = UnsafeMutablePointer<CChar>.allocate(capacity: n)
    let hdrs = UnsafeMutablePointer<pk_header>.allocate(capacity: 2000)
    defer {
      buf.deallocate()
      hdrs.deallocate()
    }
    var lim = defaultLimits()
    lim.max_header_fields = 2000
    let poison = 20  // inside the first field line
    var calls = 0
    var r = PK_PARSE_INCOMPLETE
    for len in 1...n {
      buf[len - 1] = CChar(bitPattern: input[len - 1])
      if len == 100 { buf[poison] = 0x0A }
      if len == n { buf[poison] = CChar(bitPattern: input[poison]) }
      var head = pk_response_head()
      head.headers = hdrs
      head.num_headers = 2000
      r = pk_parse_response_head(buf, len, len - 1, &head, &lim)
      calls += 1
      if r != PK_PARSE_INCOMPLETE {
        if r > 0 { XCTAssertEqual(Int(head.num_headers), i) }
        break
      }
    }
    XCTAssertEqual(Int(r), n)
    XCTAssertEqual(calls, n)
  }

  func testResumeHintIsOnlyAHint() {
    // A hint of 0 (or one past len) rescans everything and still works.
    var input = bytes("HTTP/1.1 200 OK\r\nA: b\r\n\r\n")
    var lim = defaultLimits()
    var hdrs = [pk_header](repeating: pk_header(), count: 4)
    for hint in [0, 5, input.count, input.count + 10] {
      let r: Int32 = input.withUnsafeMutableBufferPointer { raw in
        raw.withMemoryRebound(to: CChar.self) { buf in
          hdrs.withUnsafeMutableBufferPointer { hp in
            var h = pk_response_head()
            h.headers = hp.baseAddress
            h.num_headers = hp.count
            return pk_parse_response_head(buf.baseAddress, buf.count, hint, &h, &lim)
          }
        }
      }
      XCTAssertEqual(Int(r), input.count, "hint \(hint)")
    }
  }

  func testNullLimitsMeanDefaults() {
    var input = bytes("HTTP/1.1 200 OK\r\n\r\n")
    let r: Int32 = input.withUnsafeMutableBufferPointer { raw in
      raw.withMemoryRebound(to: CChar.self) { buf in
        var h = pk_response_head()
        return pk_parse_response_head(buf.baseAddress, buf.count, 0, &h, nil)
      }
    }
    XCTAssertEqual(r, 19)
  }
}
