import XCTest
@testable import Pocket

extension PocketHeaders {
    /// Fields as a received response holds them: one packed block.
    static func received(_ pairs: [(String, String)]) -> PocketHeaders {
        PocketHeaders(packed: .block(pairs))
    }
}

extension PackedFields {
    /// A block holding `pairs`, as the engine's head callback builds one.
    static func block(_ pairs: [(String, String)]) -> PackedFields {
        let bytes = pairs.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        let total = bytes.reduce(0) { $0 + $1.0.count + $1.1.count }
        return PackedFields.make(count: pairs.count, totalBytes: total) { i in
            bytes[i].0.withUnsafeBytes { name in bytes[i].1.withUnsafeBytes { value in
                // Stable for the call: the arrays outlive `make`.
                (UnsafeRawBufferPointer(start: name.baseAddress, count: name.count),
                 UnsafeRawBufferPointer(start: value.baseAddress, count: value.count)) } }
        }
    }
}

final class PocketHeadersTests: XCTestCase {
    /// A response's headers refer to their block by its plain address. An
    /// enum of a list and a block kept its case in the reference's high
    /// bits, which LeakSanitizer does not read as a pointer: the block of a
    /// response still alive at exit was reported as leaked.
    func testAReceivedBlockIsReferencedByItsPlainAddress() {
        let block = PackedFields.block([("Content-Type", "text/plain"), ("ETag", "\"a\"")])
        let address = UInt(bitPattern: Unmanaged.passUnretained(block).toOpaque())
        let headers = PocketHeaders(packed: block)
        let words = withUnsafeBytes(of: headers) { Array($0.bindMemory(to: UInt.self)) }
        XCTAssertTrue(words.contains(address), "words \(words.map { String($0, radix: 16) }), block at \(String(address, radix: 16))")
        XCTAssertEqual(headers["etag"], "\"a\"")
    }

    func testAChangeTurnsTheBlockIntoAListKeepingOrderAndDuplicates() {
        var headers = PocketHeaders.received([("Set-Cookie", "a=1"), ("Accept", "text/plain"), ("Set-Cookie", "b=2")])
        headers.add(name: "X-Trace", value: "1")
        XCTAssertEqual(headers.fields.map(\.name), ["Set-Cookie", "Accept", "Set-Cookie", "X-Trace"])
        headers["set-cookie"] = "c=3"
        XCTAssertEqual(headers.fields.map { "\($0.name): \($0.value)" }, ["Set-Cookie: c=3", "Accept: text/plain", "X-Trace: 1"])
        headers.remove("ACCEPT")
        XCTAssertEqual(headers.count, 2)
        XCTAssertEqual(headers, ["Set-Cookie": "c=3", "X-Trace": "1"])
    }
}
