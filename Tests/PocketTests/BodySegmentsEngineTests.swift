import Foundation
import XCTest
@testable import Pocket
import CHTTPEngine

/// The engine's `PK_BODY_SEGMENTS` spec checks (pk_engine_submit refuses a
/// malformed segment list synchronously, before anything is queued or
/// sent). What segments put on the wire is checked through real uploads in
/// MultipartTests.
final class BodySegmentsEngineTests: XCTestCase {
    private func submit(_ segments: [pk_body_segment], bodyLength: Int, chunked: Bool) throws -> Int32 {
        let client = try makeClient()
        var segments = segments
        return segments.withUnsafeMutableBufferPointer { segs in
            "POST".withCString { method in
                "127.0.0.1".withCString { host in
                    "/".withCString { target in
                        var spec = pk_request_spec()
                        spec.method = method
                        spec.method_len = 4
                        spec.host = host
                        spec.host_len = 9
                        spec.port = 9 // never reached: every case here is refused
                        spec.target = target
                        spec.target_len = 1
                        spec.has_body = 1
                        spec.body_kind = Int32(PK_BODY_SEGMENTS.rawValue)
                        spec.body_len = bodyLength
                        spec.body_chunked = chunked ? 1 : 0
                        spec.segments = UnsafePointer(segs.baseAddress)
                        spec.num_segments = segs.count
                        spec.idempotent = -1
                        var handle = pk_request_handle()
                        return pk_engine_submit(client.engine.raw, &spec, &handle)
                    }
                }
            }
        }
    }

    private func memory(_ len: UInt64, data: UnsafeRawPointer? = UnsafeRawPointer(bitPattern: 0x1000)) -> pk_body_segment {
        pk_body_segment(kind: Int32(PK_SEG_MEMORY.rawValue), data: data, fd: -1, offset: 0, len: len)
    }

    private func stream(_ len: UInt64) -> pk_body_segment {
        pk_body_segment(kind: Int32(PK_SEG_STREAM.rawValue), data: nil, fd: -1, offset: 0, len: len)
    }

    func testMalformedSegmentListsAreRefusedAtSubmit() throws {
        let invalid = -Int32(PK_E_INVALID_ARGUMENT.rawValue)
        // Content-Length must be the exact sum of the segments.
        XCTAssertEqual(try submit([memory(3), memory(4)], bodyLength: 8, chunked: false), invalid)
        XCTAssertEqual(try submit([memory(3), stream(4)], bodyLength: 6, chunked: false), invalid)
        // An unknown length is for stream segments of a chunked body only.
        XCTAssertEqual(try submit([stream(UInt64.max)], bodyLength: 0, chunked: false), invalid)
        XCTAssertEqual(try submit([memory(UInt64.max)], bodyLength: 0, chunked: true), invalid)
        // Memory without bytes, a file without a descriptor, an unknown kind.
        XCTAssertEqual(try submit([memory(5, data: nil)], bodyLength: 5, chunked: false), invalid)
        XCTAssertEqual(try submit([pk_body_segment(kind: Int32(PK_SEG_FILE.rawValue), data: nil, fd: -1, offset: 0, len: 1)],
                                  bodyLength: 1, chunked: false), invalid)
        XCTAssertEqual(try submit([pk_body_segment(kind: 9, data: nil, fd: -1, offset: 0, len: 0)], bodyLength: 0, chunked: false),
                       invalid)
        // Lengths that overflow when summed.
        XCTAssertEqual(try submit([memory(UInt64.max - 1), memory(2)], bodyLength: 0, chunked: false), invalid)
    }
}
