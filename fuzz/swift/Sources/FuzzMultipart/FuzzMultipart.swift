// libFuzzer target: the multipart/form-data encoder (MultipartEncoding).
//
// The input describes a form: an optional custom boundary, then up to 8
// fields, data parts, file parts (the content written to a scratch file whose
// extension the input picks) or stream parts (with or without a length),
// with fuzzer-chosen names, file names, content types, extra part headers and
// contents. The form is laid out as Pocket sends it, the body put together
// from the layout's segments (memory, the file, the stream's bytes); then,
// beyond "no crash":
//   - a form the encoder refuses is one an independent check says is bad
//     (boundary not RFC 2046, a custom boundary inside a part's content, a
//     header name that is not a token, a header value with a control byte,
//     a header line that would read as a delimiter), with the error code
//     `.invalidMultipartForm`;
//   - a form it accepts is, for the independent parser below (RFC 2046
//     §5.1.1: delimiters are CRLF "--" boundary at a line start), exactly the
//     parts that went in: same count, a Content-Disposition naming each part
//     with its escaped name and file name, and the very content bytes;
//   - every head line is "token: value" with no bare CR or LF;
//   - file and stream parts get a segment of their own, in order, and a
//     stream part makes the form one-shot.
import FuzzDriver
@testable import Pocket

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
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
    enum Kind { case field, data, file, stream }
    var name: String
    var fileName: String?
    var contentType: String?
    var headers: [(String, String)]
    var content: [UInt8]
    var kind: Kind
    /// A field's or data part's bytes are in the layout's memory (and
    /// checked for a custom boundary); a file's or stream's are not.
    var inMemory: Bool { kind == .field || kind == .data }
    /// Whatever carries a Content-Type of its own.
    var isData: Bool { kind != .field }
}

/// Scratch files for file parts: one directory per process, a file per part
/// index, rewritten for every input.
let scratch: URL = {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("pocket-fuzz-multipart-\(ProcessInfo.processInfo.processIdentifier)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(at: scratch) }
    return dir
}()
let extensions = ["txt", "json", "png", "bin", "", "tar.gz", "HTML", "jpeg"]

/// A small file's bytes by read(2) (FileManager.contents(atPath:) keeps a
/// buffer LeakSanitizer reports: the same leak scripts/lsan-swift.supp names).
func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { return nil }
        if n == 0 { return out }
        out += buffer[..<n]
    }
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
    var form = customBoundary.map { PocketMultipartForm(boundary: $0) } ?? PocketMultipartForm()
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
        let h = PocketHeaders(headers)
        let spec: PartSpec
        switch (kind >> 5) & 3 {
        case 2: // a file part
            let ext = extensions[Int(kind >> 7) * 4 + specs.count % 4]
            let url = scratch.appendingPathComponent("f\(specs.count)" + (ext.isEmpty ? "" : ".\(ext)"))
            do { try Data(content).write(to: url) } catch { fail("cannot write \(url.path): \(error)") }
            form.addFile(name, at: url, fileName: fileName, contentType: contentType, headers: h)
            spec = PartSpec(name: name, fileName: fileName ?? url.lastPathComponent, contentType: contentType,
                            headers: headers, content: content, kind: .file)
        case 3: // a stream part, with its length when the kind says so
            let chunks = AsyncStream<Data> { $0.yield(Data(content)); $0.finish() }
            form.addStream(name, chunks, length: kind & 1 != 0 ? content.count : nil, fileName: fileName,
                           contentType: contentType, headers: h)
            spec = PartSpec(name: name, fileName: fileName, contentType: contentType, headers: headers,
                            content: content, kind: .stream)
        default:
            if kind & 1 != 0 {
                form.addData(name, Data(content), fileName: fileName, contentType: contentType, headers: h)
                spec = PartSpec(name: name, fileName: fileName, contentType: contentType, headers: headers,
                                content: content, kind: .data)
            } else {
                form.addField(name, String(decoding: content, as: UTF8.self), headers: h)
                // A field's content is its string's UTF-8 (invalid bytes repaired).
                spec = PartSpec(name: name, fileName: nil, contentType: nil, headers: headers,
                                content: Array(String(decoding: content, as: UTF8.self).utf8), kind: .field)
            }
        }
        specs.append(spec)
    }
    let boundary = form.boundary
    if customBoundary == nil && specs.contains(where: { contains($0.content, Array(boundary.utf8)) }) {
        fail("the random boundary \(boundary) is inside a part's content")
    }

    // Independent verdict on the form.
    var reasons: [String] = []
    if let b = customBoundary {
        if !isRFC2046Boundary(b) { reasons.append("boundary") }
        if specs.contains(where: { $0.inMemory && contains($0.content, Array(b.utf8)) }) { reasons.append("boundary in content") }
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

    // The body as the engine sends it: memory ranges in order (together the
    // whole memory), each file or stream part's segment in its place.
    let outside = specs.filter { !$0.inMemory }
    if form.isReplayable == specs.contains(where: { $0.kind == .stream }) { fail("isReplayable is \(form.isReplayable)") }
    var body: [UInt8] = []
    var next = 0, memoryEnd = 0
    for segment in layout.segments {
        switch segment {
        case .bytes(let range):
            guard range.lowerBound == memoryEnd, !range.isEmpty else { fail("memory segment \(range) after \(memoryEnd)") }
            memoryEnd = range.upperBound
            body += layout.memory[range]
        case .file(let path):
            guard next < outside.count, outside[next].kind == .file else { fail("a file segment out of order") }
            guard let bytes = readFile(path), bytes == outside[next].content else {
                fail("file segment \(path) is not the part's file")
            }
            body += bytes
            next += 1
        case let .stream(_, length):
            guard next < outside.count, outside[next].kind == .stream else { fail("a stream segment out of order") }
            if let length, length != outside[next].content.count { fail("stream length \(length)") }
            body += outside[next].content
            next += 1
        }
    }
    guard next == outside.count, memoryEnd == layout.memory.count else {
        fail("\(next) of \(outside.count) file/stream segments, memory to \(memoryEnd) of \(layout.memory.count)")
    }
    // A file's or stream's content may hold a custom boundary (nothing reads
    // them before sending: the caller's to avoid, as documented); the parse
    // below then rightly differs.
    if let b = customBoundary, outside.contains(where: { contains($0.content, Array(b.utf8)) }) { return }
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
