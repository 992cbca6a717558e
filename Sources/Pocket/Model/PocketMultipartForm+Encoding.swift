#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A form laid out as the body's segments: in-memory bytes (part heads,
/// fields, data parts, delimiters — consecutive ones merged), files and
/// streams, in the order they go out.
struct MultipartLayout {
    enum Segment {
        case bytes(Range<Int>) // in `memory`
        case file(path: String)
        case stream(StreamSource, length: Int?)
    }

    /// Where a part's content starts: segment index and offset in it.
    struct Span {
        var name: String
        var segment: Int
        var offset: Int
        var length: Int? // nil: a file (known once opened) or a stream without length
    }

    var memory = Data()
    var segments: [Segment] = []
    var spans: [Span] = []
}

enum MultipartEncoding {
    /// True if `needle` occurs in `data`.
    static func contains(_ data: Data, _ needle: String) -> Bool {
        var n = needle
        return n.withUTF8 { nb in
            data.withUnsafeBytes { db in
                guard nb.count > 0, db.count >= nb.count else { return false }
                // memchr for the first byte, memcmp for the rest (memmem is a GNU extension).
                let base = db.baseAddress!, last = db.count - nb.count
                var at = 0
                while at <= last, let hit = memchr(base + at, Int32(nb[0]), last - at + 1) {
                    let i = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + i, nb.baseAddress!, nb.count) == 0 { return true }
                    at = i + 1
                }
                return false
            }
        }
    }

    /// `s` as the inside of a quoted-string: UTF-8 as-is; `"`, `\`, CR, LF
    /// and the other control bytes (HTAB aside) as `%XX` (see `PocketMultipartForm`).
    static func escape(_ s: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(s.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for b in s.utf8 {
            if b == 0x22 || b == 0x5C || (b < 0x20 && b != 0x09) || b == 0x7F {
                out += [0x25, hex[Int(b >> 4)], hex[Int(b & 15)]]
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 2046 §5.1.1: 1–70 `bchars`, the last not a space.
    static func isValidBoundary(_ b: String) -> Bool {
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)
        return (1...70).contains(b.utf8.count) && b.utf8.allSatisfy(allowed.contains) && b.utf8.last != 0x20
    }

    private static func isToken(_ s: String) -> Bool {
        let specials = Set("!#$%&'*+-.^_`|~".utf8)
        return !s.isEmpty && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || specials.contains($0) }
    }

    private static func isFieldValue(_ s: String) -> Bool {
        s.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// The header block of one part (without the delimiter before it).
    /// A header name starting with `--` and the boundary is refused: its
    /// line would read as a delimiter (RFC 2046 §5.1.1), splitting the part.
    static func head(of part: PocketMultipartForm.Part, boundary: String) throws(PocketError) -> String {
        var fields: [(String, String)] = []
        var disposition = "form-data; name=\"\(escape(part.name))\""
        if let fileName = part.fileName { disposition += "; filename=\"\(escape(fileName))\"" }
        if !part.headers.contains("Content-Disposition") { fields.append(("Content-Disposition", disposition)) }
        if let type = part.contentType, !part.headers.contains("Content-Type") { fields.append(("Content-Type", type)) }
        for f in part.headers.fields { fields.append((f.name, f.value)) }
        var out = ""
        for (name, value) in fields {
            guard isToken(name) else {
                throw PocketError(.invalidMultipartForm, "part \"\(part.name)\": header name \"\(name)\" is not a token")
            }
            guard !name.utf8.starts(with: "--\(boundary)".utf8) else {
                throw PocketError(.invalidMultipartForm,
                                  "part \"\(part.name)\": header name \"\(name)\" would read as the boundary delimiter")
            }
            guard isFieldValue(value) else {
                throw PocketError(.invalidMultipartForm, "part \"\(part.name)\": the value of \(name) contains CR, LF, NUL or another control byte")
            }
            out += "\(name): \(value)\r\n"
        }
        return out + "\r\n"
    }

    /// The form's segments. Fails with `.invalidMultipartForm` for a bad
    /// custom boundary or part header.
    static func layout(_ form: PocketMultipartForm) throws(PocketError) -> MultipartLayout {
        let boundary = form.boundary
        if form.boundaryIsCustom {
            guard isValidBoundary(boundary) else {
                throw PocketError(.invalidMultipartForm, "the boundary \"\(boundary)\" is not 1-70 RFC 2046 characters")
            }
            for part in form.parts {
                if case .bytes(let d) = part.content, contains(d, boundary) {
                    throw PocketError(.invalidMultipartForm, "part \"\(part.name)\" contains the boundary \"\(boundary)\"")
                }
            }
        }
        var layout = MultipartLayout()
        var pending = 0 // start of the memory not yet in a segment
        func flush() {
            if layout.memory.count > pending { layout.segments.append(.bytes(pending..<layout.memory.count)) }
            pending = layout.memory.count
        }
        for (i, part) in form.parts.enumerated() {
            layout.memory.append(contentsOf: (i == 0 ? "" : "\r\n").utf8)
            layout.memory.append(contentsOf: "--\(boundary)\r\n".utf8)
            layout.memory.append(contentsOf: try head(of: part, boundary: boundary).utf8)
            switch part.content {
            case .bytes(let d):
                layout.spans.append(.init(name: part.name, segment: layout.segments.count,
                                          offset: layout.memory.count - pending, length: d.count))
                layout.memory.append(d)
            case .file(let path):
                flush()
                layout.spans.append(.init(name: part.name, segment: layout.segments.count, offset: 0, length: nil))
                layout.segments.append(.file(path: path))
            case let .stream(source, length):
                flush()
                layout.spans.append(.init(name: part.name, segment: layout.segments.count, offset: 0, length: length))
                layout.segments.append(.stream(source, length: length))
            }
        }
        // An empty form is the close delimiter alone (RFC 2046 §5.1.1 asks
        // for a part, but servers accept this and nothing better exists).
        layout.memory.append(contentsOf: "\(form.parts.isEmpty ? "" : "\r\n")--\(boundary)--\r\n".utf8)
        flush()
        return layout
    }
}
