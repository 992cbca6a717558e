import XCTest
import CHTTPEngine

/// The streaming gzip/deflate decoder, fed whole and in pieces.
final class InflateTests: XCTestCase {
    /// Decodes `input` split into pieces of `piece` bytes; returns output and the first error.
    private func decode(_ coding: pk_coding, _ input: [UInt8], piece: Int = .max,
                        limits: pk_inflate_limits? = nil) -> (out: [UInt8], err: Int32) {
        var dec: OpaquePointer?
        var l = pk_inflate_limits()
        if let limits { l = limits } else { pk_inflate_limits_init(&l) }
        XCTAssertEqual(pk_inflate_create(coding, &l, &dec), 0)
        defer { pk_inflate_free(dec) }
        final class Sink { var bytes: [UInt8] = [] }
        let sink = Sink()
        let ctx = Unmanaged.passUnretained(sink).toOpaque()
        var offset = 0
        while offset < input.count {
            let n = min(piece, input.count - offset)
            let rc = input[offset..<(offset + n)].withUnsafeBytes { buf in
                pk_inflate_feed(dec, buf.baseAddress, n, { ctx, data, len in
                    let s = Unmanaged<Sink>.fromOpaque(ctx!).takeUnretainedValue()
                    s.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: len))
                    return 0
                }, ctx)
            }
            if rc != 0 { return (sink.bytes, rc) }
            offset += n
        }
        return (sink.bytes, pk_inflate_finish(dec))
    }

    func testGzipZlibAndRawDeflateWholeAndInPieces() {
        for piece in [Int.max, 7, 1] {
            XCTAssertEqual(decode(PK_CODING_GZIP, InflateVectors.gzip, piece: piece).out, InflateVectors.text)
            XCTAssertEqual(decode(PK_CODING_DEFLATE, InflateVectors.zlib, piece: piece).out, InflateVectors.text)
            XCTAssertEqual(decode(PK_CODING_DEFLATE, InflateVectors.rawDeflate, piece: piece).out, InflateVectors.text,
                           "raw deflate, as servers wrongly send it")
            let two = decode(PK_CODING_GZIP, InflateVectors.twoMembers, piece: piece)
            XCTAssertEqual(two.err, 0)
            XCTAssertEqual(String(decoding: two.out, as: UTF8.self), "first member, second member")
        }
    }

    func testTruncatedAndCorruptStreamsAreErrors() {
        for cut in [1, 10, InflateVectors.gzip.count - 1] {
            let r = decode(PK_CODING_GZIP, Array(InflateVectors.gzip.prefix(cut)))
            XCTAssertEqual(r.err, -Int32(PK_E_TRUNCATED_ENCODING.rawValue), "cut at \(cut)")
        }
        var corrupt = InflateVectors.gzip
        corrupt[20] ^= 0xff
        XCTAssertEqual(decode(PK_CODING_GZIP, corrupt).err, -Int32(PK_E_BAD_ENCODING.rawValue))
        XCTAssertEqual(decode(PK_CODING_GZIP, Array("not gzip at all".utf8)).err, -Int32(PK_E_BAD_ENCODING.rawValue))
        XCTAssertEqual(decode(PK_CODING_GZIP, InflateVectors.gzip + [1, 2, 3]).err, -Int32(PK_E_BAD_ENCODING.rawValue),
                       "junk after the last member")
        XCTAssertEqual(decode(PK_CODING_GZIP, []).err, 0, "an empty body is empty")
    }

    func testDecompressionBombAndAbsoluteCap() {
        // 4 MiB of zeros in ~4 KiB: ratio ~1000, past the default 200 after 1 MiB.
        let bomb = decode(PK_CODING_GZIP, InflateVectors.bomb)
        XCTAssertEqual(bomb.err, -Int32(PK_E_DECOMPRESSION_BOMB.rawValue))
        XCTAssertLessThanOrEqual(bomb.out.count, (1 << 20) + 16384, "it stops right after the floor")
        var generous = pk_inflate_limits()
        pk_inflate_limits_init(&generous)
        generous.max_ratio = 0 // ratio guard off
        generous.max_output = 100_000
        XCTAssertEqual(decode(PK_CODING_GZIP, InflateVectors.bomb, limits: generous).err,
                       -Int32(PK_E_DECODED_TOO_LARGE.rawValue))
        generous.max_output = 0
        XCTAssertEqual(decode(PK_CODING_GZIP, InflateVectors.bomb, limits: generous).out.count, 4 << 20)
    }
}
