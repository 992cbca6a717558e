// libFuzzer target: the multipart/form-data encoder (MultipartEncoding).
//
// The input describes a form: an optional custom boundary, then up to 8
// fields or data parts with fuzzer-chosen names, file names, content types,
// extra part headers and contents. The form is laid out as Pocket sends it;
// then, beyond "no crash":
//   - a form the encoder refuses is one an independent check says is bad
//     (boundary not RFC 2046, a custom boundary inside a part's content, a
//     header name that is not a token, a header value with a control byte,
//     a header line that would read as a delimiter), with the error code
//     `.invalidMultipartForm`;
//   - a form it accepts is, for the independent parser below (RFC 2046
//     §5.1.1: delimiters are CRLF "--" boundary at a line start), exactly the
//     parts that went in: same count, a Content-Disposition naming each part
//     with its escaped name and file name, and the very content bytes;
//   - every head line is "token: value" with no bare CR or LF.
import FuzzDriver
@testable import Pocket

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads the fuzzer's bytes as a small description language.
struct Reader {
    var bytes: ArraySlice<UInt8>
    mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }
    mutating func chunk(max: Int) -> [UInt8] {
        let n = min(Int(byte()) % (max + 1), bytes.count)
        defer { bytes = bytes.dropFirst(n) }
        return Array(bytes.prefix(n))
    }
    mutating func text(max: Int) -> String { String(decoding: chunk(max: max), as: UTF8.self) }
}

struct PartSpec {
    var name: String
    var fileName: String?
    var contentType: String?
    var headers: [(String, String)]
    var content: [UInt8]
    var isData: Bool
}

func fail(_ message: @autoclosure () -> String) -> Never {
    fatalError("FuzzMultipart: " + message())
}

func isToken(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.allSatisfy { b in
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(b)
    }
}

func isCleanValue(_ s: String) -> Bool { s.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) } }

func isRFC2046Boundary(_ b: String) -> Bool {
    let bchars = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)
    return (1...70).contains(b.utf8.count) && b.utf8.allSatisfy(bchars.contains) && b.utf8.last != 0x20
}

func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
    guard !needle.isEmpty, hay.count >= needle.count, from <= hay.count - needle.count else { return nil }
    var i = from
    while i <= hay.count - needle.count {
        if hay[i] == needle[0] && Array(hay[i..<i + needle.count]) == needle { return i }
        i += 1
    }
    return nil
}

func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool { find(needle, in: hay, from: 0) != nil }

/// The header fields of a part whose validity depends on the caller (the
/// Content-Disposition Pocket writes is always clean): a data part's own
/// Content-Type unless its headers have one, then the part's headers.
func callerFields(_ p: PartSpec) -> [(String, String)] {
    let hasType = p.headers.contains { $0.0.lowercased() == "content-type" }
    if let type = p.contentType, p.isData, !hasType { return [("Content-Type", type)] + p.headers }
    return p.headers
}

/// RFC 2046 parsing of a whole body: the parts' (head, content) in order.
func parse(_ body: [UInt8], boundary: String) -> [(head: [UInt8], content: [UInt8])]? {
    let delimiter = Array("\r\n--\(boundary)".utf8)
    let text = Array("\r\n".utf8) + body // the first delimiter has no CRLF before it
    var parts: [(head: [UInt8], content: [UInt8])] = []
    guard var at = find(delimiter, in: text, from: 0), at == 0 else { return nil }
    while true {
        let after = at + delimiter.count
        if text.count >= after + 2, text[after] == 0x2D, text[after + 1] == 0x2D { // "--": close delimiter
            return Array(text[(after + 2)...]) == Array("\r\n".utf8) ? parts : nil
        }
        guard text.count >= after + 2, text[after] == 0x0D, text[after + 1] == 0x0A else { return nil }
        guard let next = find(delimiter, in: text, from: after + 2) else { return nil }
        let part = Array(text[(after + 2)..<next])
        guard let blank = find(Array("\r\n\r\n".utf8), in: Array("\r\n".utf8) + part, from: 0) else { return nil }
        // `blank` indexes the CRLF-prefixed part: the head ends there.
        let head = Array(part[..<max(0, blank)])
        let content = Array(part[(blank + 2)...])
        parts.append((head, content))
        at = next
    }
}

/// The escape the documentation promises: UTF-8 as is; `"`, `\`, CR, LF,
/// the other control bytes (HTAB aside) and DEL as `%XX`.
func escaped(_ s: String) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    return String(decoding: s.utf8.flatMap { b -> [UInt8] in
        b == 0x22 || b == 0x5C || (b < 0x20 && b != 0x09) || b == 0x7F ? [0x25, hex[Int(b >> 4)], hex[Int(b & 15)]] : [b]
    }, as: UTF8.self)
}

func check(_ data: UnsafeRawBufferPointer) {
    var r = Reader(bytes: ArraySlice(data))
    let flags = r.byte()
    let customBoundary: String? = flags & 1 != 0 ? r.text(max: 80) : nil
    var form = customBoundary.map { MultipartForm(boundary: $0) } ?? MultipartForm()
    var specs: [PartSpec] = []
    let count = Int(r.byte() % 9)
    for _ in 0..<count {
        let kind = r.byte()
        let name = r.text(max: 24)
        let fileName: String? = kind & 2 != 0 ? r.text(max: 24) : nil
        let contentType: String? = kind & 4 != 0 ? r.text(max: 24) : nil
        var headers: [(String, String)] = []
        for _ in 0..<Int((kind >> 3) % 3) { headers.append((r.text(max: 16), r.text(max: 24))) }
        let content = r.chunk(max: 200)
        let isData = kind & 1 != 0
        let h = HTTPHeaders(headers)
        if isData {
            form.addData(name, Data(content), fileName: fileName, contentType: contentType, headers: h)
        } else {
            form.addField(name, String(decoding: content, as: UTF8.self), headers: h)
        }
        // A field's content is its string's UTF-8 (invalid bytes repaired).
        let sent = isData ? content : Array(String(decoding: content, as: UTF8.self).utf8)
        specs.append(PartSpec(name: name, fileName: isData ? fileName : nil,
                              contentType: isData ? contentType : nil, headers: headers, content: sent, isData: isData))
    }
    let boundary = form.boundary
    if customBoundary == nil && specs.contains(where: { contains($0.content, Array(boundary.utf8)) }) {
        fail("the random boundary \(boundary) is inside a part's content")
    }

    // Independent verdict on the form.
    var reasons: [String] = []
    if let b = customBoundary {
        if !isRFC2046Boundary(b) { reasons.append("boundary") }
        if specs.contains(where: { contains($0.content, Array(b.utf8)) }) { reasons.append("boundary in content") }
    }
    for p in specs {
        for (n, v) in callerFields(p) {
            if !isToken(n) { reasons.append("header name \(n)") }
            if !isCleanValue(v) { reasons.append("header value of \(n)") }
            // A header line starting with "--boundary" would read as a delimiter.
            if "\(n): \(v)".utf8.starts(with: "--\(boundary)".utf8) { reasons.append("header line reads as a delimiter") }
        }
    }

    let layout: MultipartLayout
    do {
        layout = try MultipartEncoding.layout(form)
    } catch {
        guard error.code == .invalidMultipartForm else { fail("refused with \(error.code): \(error.message)") }
        if reasons.isEmpty { fail("refused a good form: \(error.message)") }
        return
    }
    if !reasons.isEmpty { fail("accepted a bad form (\(reasons.joined(separator: ", "))), boundary \(boundary)") }

    // Only in-memory parts: one bytes segment holding the whole body.
    guard layout.segments.count == 1, case let .bytes(range) = layout.segments[0], range == 0..<layout.memory.count else {
        fail("\(layout.segments.count) segments for an in-memory form")
    }
    let body = Array(layout.memory)
    guard let parsed = parse(body, boundary: boundary) else { fail("the body does not parse as multipart") }
    guard parsed.count == specs.count else { fail("\(specs.count) parts went in, \(parsed.count) came out") }
    for (i, (spec, part)) in zip(specs, parsed).enumerated() {
        guard part.content == spec.content else { fail("part \(i): content differs") }
        if !spec.headers.contains(where: { $0.0.lowercased() == "content-disposition" }) {
            var disposition = "Content-Disposition: form-data; name=\"\(escaped(spec.name))\""
            if let f = spec.fileName { disposition += "; filename=\"\(escaped(f))\"" }
            guard part.head.starts(with: Array(disposition.utf8)) else {
                fail("part \(i): head \(String(decoding: part.head, as: UTF8.self)) does not start with \(disposition)")
            }
        }
        // Every head line is "token: value" with no bare CR or LF.
        var line: [UInt8] = []
        for b in part.head { // each line ends in CRLF (the blank line is not in `head`)
            line.append(b)
            guard line.count >= 2, line.suffix(2) == [0x0D, 0x0A] else { continue }
            let text = line.dropLast(2)
            guard !text.contains(0x0D), !text.contains(0x0A), let colon = text.firstIndex(of: 0x3A),
                  isToken(String(decoding: text[..<colon], as: UTF8.self)) else {
                fail("part \(i): bad head line \(String(decoding: line, as: UTF8.self).debugDescription)")
            }
            line = []
        }
        guard line.isEmpty else { fail("part \(i): the head does not end in CRLF") }
    }
}

@_cdecl("FuzzMultipart_main")
public func fuzzMultipartMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, check)
}
