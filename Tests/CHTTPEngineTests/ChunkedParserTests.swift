import CHTTPEngine
import XCTest

// pk_chunked_decode. assertChunked feeds one decoder the input whole, byte
// by byte and split in two at every offset, and requires the same decoded
// bytes, consumed count, done flag and error each time.
final class ChunkedDecoderTests: XCTestCase {
  func testSingleChunk() {
    let o = assertChunked("5\r\nhello\r\n0\r\n\r\n")
    XCTAssertEqual(o.decoded, bytes("hello"))
    XCTAssertTrue(o.done)
    XCTAssertEqual(o.result, 15)
  }

  func testEmptyBody() {
    let o = assertChunked("0\r\n\r\n")
    XCTAssertEqual(o.decoded, [])
    XCTAssertTrue(o.done)
    XCTAssertEqual(o.result, 5)
  }

  func testManyChunksAndHexCase() {
    let o = assertChunked("a\r\n0123456789\r\nA\r\nABCDEFGHIJ\r\n1\r\n!\r\n1f\r\n"
      + String(repeating: "x", count: 31) + "\r\n1F\r\n" + String(repeating: "y", count: 31) + "\r\n0\r\n\r\n")
    XCTAssertEqual(o.decoded, bytes("0123456789ABCDEFGHIJ!" + String(repeating: "x", count: 31)
      + String(repeating: "y", count: 31)))
    XCTAssertTrue(o.done)
  }

  func testDataMayContainCRLFAndAnything() {
    let data: [UInt8] = [0x0D, 0x0A, 0x00, 0xFF, 0x30, 0x0D, 0x0A, 0x0D, 0x0A]
    let o = assertChunked(bytes("9\r\n") + data + bytes("\r\n0\r\n\r\n"))
    XCTAssertEqual(o.decoded, data)
  }

  func testLeadingZeroSizes() {
    let o = assertChunked("0005\r\nhello\r\n000\r\n\r\n")
    XCTAssertEqual(o.decoded, bytes("hello"))
    XCTAssertTrue(o.done)
  }

  func testSixteenHexDigitsAndSeventeen() {
    let o = assertChunked("0000000000000003\r\nabc\r\n0000000000000000\r\n\r\n")
    XCTAssertEqual(o.decoded, bytes("abc"))
    XCTAssertTrue(o.done)
    assertChunkedError("00000000000000003\r\nabc\r\n0\r\n\r\n", PK_E_CHUNK_SIZE_TOO_LONG)
    assertChunkedError("3\r\nabc\r\n00000000000000000\r\n\r\n", PK_E_CHUNK_SIZE_TOO_LONG)
    // The largest 16-digit size is accepted (the body is just not over yet).
    let big = assertChunked("FFFFFFFFFFFFFFFF\r\nabc")
    XCTAssertEqual(big.decoded, bytes("abc"))
    XCTAssertFalse(big.done)
    XCTAssertEqual(big.result, 21)
  }

  func testSizeOverflowWithARaisedDigitLimit() {
    var lim = defaultLimits()
    lim.max_chunk_hex_digits = 32
    // 2^64 does not fit, whatever the digit limit says.
    assertChunkedError("10000000000000000\r\n", PK_E_CHUNK_SIZE_TOO_LONG, limits: lim)
    assertChunkedError("FFFFFFFFFFFFFFFFF\r\n", PK_E_CHUNK_SIZE_TOO_LONG, limits: lim)
    // Leading zeros do not overflow.
    XCTAssertEqual(assertChunked("000000000000000000003\r\nabc\r\n0\r\n\r\n", limits: lim).decoded, bytes("abc"))
    lim.max_chunk_hex_digits = 2
    XCTAssertEqual(assertChunked("ff\r\n" + String(repeating: "z", count: 255) + "\r\n0\r\n\r\n",
                                 limits: lim).decoded.count, 255)
    assertChunkedError("001\r\nz\r\n0\r\n\r\n", PK_E_CHUNK_SIZE_TOO_LONG, limits: lim)
  }

  func testExtensionsAreSkipped() {
    let o = assertChunked("5;name\r\nhello\r\n6;a=b;c=\"quoted; \\\"value\\\"\"\r\n world\r\n"
      + "1 ; x = y ; z\t\r\n!\r\n2;e=\"\"\r\n!!\r\n0;last=1\r\n\r\n")
    XCTAssertEqual(o.decoded, bytes("hello world!!!"))
    XCTAssertTrue(o.done)
    // Whitespace after the size without an extension is tolerated (BWS).
    XCTAssertEqual(assertChunked("3 \t\r\nabc\r\n0\r\n\r\n").decoded, bytes("abc"))
    // obs-text in a quoted extension value.
    XCTAssertEqual(assertChunked(bytes("1;q=\"") + [0xE9] + bytes("\"\r\nx\r\n0\r\n\r\n")).decoded, bytes("x"))
  }

  func testMalformedExtensions() {
    for ext in [";", "; ", ";=v", ";a=", ";a= ", ";a=\"open", ";a=\"x\"y", ";a b", ";a=b c", ";a=\u{01}",
                ";a\u{01}", ";a=\"\u{7F}\"", ";a=\"x\\\u{0}\"", "x", ";a=b\"", " x"] {
      assertChunkedError("1" + ext + "\r\nx\r\n0\r\n\r\n", PK_E_BAD_CHUNK)
    }
  }

  func testExtensionLimit() {
    var lim = defaultLimits()
    lim.max_chunk_ext_bytes = 8
    // Counted from the byte after the size to the CR: ";a=12345" is 8.
    XCTAssertEqual(assertChunked("1;a=12345\r\nx\r\n0\r\n\r\n", limits: lim).decoded, bytes("x"))
    assertChunkedError("1;a=123456\r\nx\r\n0\r\n\r\n", PK_E_CHUNK_EXT_TOO_LARGE, limits: lim)
    // Per line, not per body.
    XCTAssertTrue(assertChunked("1;a=12345\r\nx\r\n1;b=12345\r\ny\r\n0;c=12345\r\n\r\n", limits: lim).done)
    // The default is 4096.
    let long = String(repeating: "e", count: 4095)
    XCTAssertTrue(assertChunked("1;" + long + "\r\nx\r\n0\r\n\r\n").done)
    assertChunkedError("1;" + long + "e\r\nx\r\n0\r\n\r\n", PK_E_CHUNK_EXT_TOO_LARGE)
  }

  func testMalformedSizeLines() {
    for body in ["\r\n", ";a\r\nx\r\n0\r\n\r\n", "g\r\n", "-1\r\n", "+1\r\n", "0x1\r\n", " 1\r\n", "1\n",
                 "1\rx", "1\r\r\n", "1 2\r\n", "0\n\r\n"] {
      assertChunkedError(body, PK_E_BAD_CHUNK)
    }
  }

  func testMissingOrWrongCRLFAfterData() {
    assertChunkedError("3\r\nabcX\r\n0\r\n\r\n", PK_E_BAD_CHUNK)  // data longer than its size
    assertChunkedError("3\r\nabc0\r\n\r\n", PK_E_BAD_CHUNK)
    assertChunkedError("3\r\nabc\n0\r\n\r\n", PK_E_BAD_CHUNK)
    assertChunkedError("3\r\nabc\r0\r\n\r\n", PK_E_BAD_CHUNK)
    assertChunkedError("3\r\nab\r\n0\r\n\r\n", PK_E_BAD_CHUNK)  // shorter: "\r\n" eaten as data, then "0\r"
  }

  func testTrailers() {
    let body = "3\r\nabc\r\n0\r\nExpires: never\r\nX-Sum:\t42 \r\nEmpty:\r\n\r\n"
    let o = assertChunked(body)
    XCTAssertEqual(o.decoded, bytes("abc"))
    XCTAssertTrue(o.done)
    XCTAssertEqual(o.result, body.utf8.count)
    // An obs-fold continues a trailer field.
    XCTAssertTrue(assertChunked("0\r\nA: b\r\n  c\r\n\r\n").done)
    XCTAssertTrue(assertChunked(bytes("0\r\nA: ") + [0x80, 0xFF] + bytes("\r\n\r\n")).done)
  }

  func testMalformedTrailers() {
    for t in ["Bad Name: x", "Name : x", "NoColon", ": x", " leading-fold: x", "A: b\u{01}", "A: \0",
              "A: b\rc", "Ünicode: x"] {
      assertChunkedError("0\r\n" + t + "\r\n\r\n", PK_E_BAD_CHUNK)
    }
    assertChunkedError("0\r\nA: b\n\r\n", PK_E_BAD_CHUNK)
    assertChunkedError("0\r\n\n", PK_E_BAD_CHUNK)
    assertChunkedError("0\r\n\rX", PK_E_BAD_CHUNK)
  }

  func testTrailerLimit() {
    var lim = defaultLimits()
    lim.max_trailer_bytes = 16
    // Field lines with their CRLFs count; the final empty line does not.
    XCTAssertTrue(assertChunked("0\r\nA: 0123456789\r\n\r\n", limits: lim).done)  // 13 + 2
    XCTAssertTrue(assertChunked("0\r\nA: 01234567890\r\n\r\n", limits: lim).done)  // 14 + 2 = 16
    assertChunkedError("0\r\nA: 012345678901\r\n\r\n", PK_E_TRAILERS_TOO_LARGE, limits: lim)
    assertChunkedError("0\r\nA: 01234\r\nB: 01234\r\n\r\n", PK_E_TRAILERS_TOO_LARGE, limits: lim)
    // The default is 16 KiB.
    let field = "X-Big: " + String(repeating: "t", count: 16384 - 9) + "\r\n"
    XCTAssertTrue(assertChunked(bytes("0\r\n" + field + "\r\n"), maxSplits: 32).done)
    assertChunkedError(bytes("0\r\nX" + field + "\r\n"), PK_E_TRAILERS_TOO_LARGE, maxSplits: 32)
  }

  func testBytesAfterTheLastChunkStayInPlace() {
    let body = "2\r\nhi\r\n0\r\nT: v\r\n\r\n"
    let o = assertChunked(body + "HTTP/1.1 200 OK\r\n\r\n")
    XCTAssertTrue(o.done)
    XCTAssertEqual(o.result, body.utf8.count)  // leftoverIntact is checked by assertChunked
    XCTAssertEqual(o.decoded, bytes("hi"))
  }

  func testLargeChunkByteByByte() {
    let data = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let o = assertChunked(bytes("11170\r\n") + data + bytes("\r\n0\r\n\r\n"), maxSplits: 64)
    XCTAssertEqual(o.decoded, data)
    XCTAssertTrue(o.done)
  }

  func testDecodedDataIsCompactedToTheStart() {
    var raw = bytes("2\r\nab\r\n3;x\r\ncde\r\n0\r\n\r\nrest")
    var dec = pk_chunked()
    pk_chunked_init(&dec)
    var len = raw.count
    let used = raw.withUnsafeMutableBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { pk_chunked_decode(&dec, $0.baseAddress, &len, nil) }
    }
    XCTAssertEqual(len, 5)
    XCTAssertEqual(Array(raw[0..<5]), bytes("abcde"))
    XCTAssertEqual(used, raw.count - 4)
    XCTAssertEqual(Array(raw[used...]), bytes("rest"))
    XCTAssertEqual(dec.done, 1)
    // A finished decoder consumes nothing more.
    var more = 4
    let again = raw.withUnsafeMutableBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { pk_chunked_decode(&dec, $0.baseAddress! + used, &more, nil) }
    }
    XCTAssertEqual(again, 0)
    XCTAssertEqual(more, 0)
  }

  func testZeroedDecoderWorksAndErrorsStick() {
    var dec = pk_chunked()  // zero-initialised, no _init
    var lim = defaultLimits()
    var raw = bytes("2\r\nabX")
    var len = raw.count
    var r = raw.withUnsafeMutableBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { pk_chunked_decode(&dec, $0.baseAddress, &len, &lim) }
    }
    XCTAssertEqual(r, Int(code(PK_E_BAD_CHUNK)))
    var good = bytes("\r\n0\r\n\r\n")
    len = good.count
    r = good.withUnsafeMutableBufferPointer { p in
      p.withMemoryRebound(to: CChar.self) { pk_chunked_decode(&dec, $0.baseAddress, &len, &lim) }
    }
    XCTAssertEqual(r, Int(code(PK_E_BAD_CHUNK)))
    XCTAssertEqual(dec.done, 0)
  }

  func testEmptyInputConsumesNothing() {
    var dec = pk_chunked()
    pk_chunked_init(&dec)
    var len = 0
    var byte: CChar = 0
    XCTAssertEqual(pk_chunked_decode(&dec, &byte, &len, nil), 0)
    XCTAssertEqual(len, 0)
  }
}
