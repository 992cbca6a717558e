#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes `PocketJSONValue`s as JSON text: compact (for request bodies) or
/// pretty-printed with two-space indents (for messages and excerpts).
enum JSONWriter {
    /// JSON text of `value`; a mapped value is written as a JSON string of
    /// its Swift description (this is for display: request bodies go through
    /// `bytes(_:)`, which refuses them).
    static func string(_ value: PocketJSONValue, pretty: Bool) -> String {
        var sink = Sink(pretty: pretty)
        try? sink.write(value, strict: false)
        return String(decoding: sink.out, as: UTF8.self)
    }

    /// Compact UTF-8 JSON of `value`. Throws `.schemaMappingFailed` for a
    /// mapped value left in the tree or a non-finite number.
    static func bytes(_ value: PocketJSONValue) throws -> [UInt8] {
        var sink = Sink(pretty: false)
        try sink.write(value, strict: true)
        return sink.out
    }

    /// A pretty-printed excerpt of `value` around `path`: up to `context`
    /// lines before and after, the line where `path` starts marked with `>`.
    static func excerpt(of value: PocketJSONValue, at path: PocketSchemaPath, context: Int = 6) -> String {
        var sink = Sink(pretty: true)
        sink.excerpt = Excerpt(target: path.components, context: context)
        try? sink.write(value, strict: false)
        sink.newline() // flush the last line
        return sink.excerpt!.render()
    }

    struct Excerpt {
        let target: [PocketSchemaPath.Component]
        let context: Int
        var path: [PocketSchemaPath.Component] = []
        var before: [String] = []
        var marked: String?
        var after: [String] = []
        var skippedBefore = false
        var done: Bool { marked != nil && after.count >= context }
        var markNextLine = false

        /// Longest line kept, in characters: a huge string value stays readable.
        static let maxLineLength = 160

        mutating func take(_ line: String) {
            var line = line
            if line.count > Self.maxLineLength { line = String(line.prefix(Self.maxLineLength)) + "…" }
            if marked == nil {
                if markNextLine {
                    marked = line
                    return
                }
                before.append(line)
                if before.count > context { before.removeFirst(); skippedBefore = true }
            } else if after.count < context {
                after.append(line)
            }
        }

        func render() -> String {
            var lines: [String] = []
            if skippedBefore { lines.append("  ...") }
            lines += before.map { "  " + $0 }
            if let marked { lines.append("> " + marked) }
            lines += after.map { "  " + $0 }
            if marked != nil, after.count >= context { lines.append("  ...") }
            return lines.joined(separator: "\n")
        }
    }

    struct Stop: Error {}

    struct Sink {
        let pretty: Bool
        var out: [UInt8] = []
        var indent = 0
        var depth = 0
        var excerpt: Excerpt?

        init(pretty: Bool) {
            self.pretty = pretty
            out.reserveCapacity(256)
        }

        mutating func newline() {
            guard pretty else { return }
            if excerpt != nil {
                excerpt!.take(String(decoding: out, as: UTF8.self))
                out.removeAll(keepingCapacity: true)
            } else {
                out.append(0x0A)
            }
            for _ in 0..<indent { out.append(0x20); out.append(0x20) }
        }

        /// Called where a value begins (after its key, if any).
        mutating func beginValue() throws {
            guard excerpt != nil else { return }
            if excerpt!.done { throw Stop() }
            if excerpt!.marked == nil, !excerpt!.markNextLine, excerpt!.path == excerpt!.target {
                // The current line (still in `out`) is where this value starts.
                excerpt!.markNextLine = true
            }
        }

        mutating func write(_ value: PocketJSONValue, strict: Bool) throws {
            try beginValue()
            switch value {
            case .array, .object:
                // Trees built in code may nest without bound; the recursion must not.
                guard depth < PocketJSONParser.defaultMaxDepth else {
                    if strict {
                        throw PocketError(.jsonNestingTooDeep,
                                          "can't write JSON nested deeper than \(PocketJSONParser.defaultMaxDepth) arrays and dictionaries")
                    }
                    append("\"…\"")
                    return
                }
            default:
                break
            }
            depth += 1
            defer { depth -= 1 }
            switch value {
            case .null: append("null")
            case let .bool(b): append(b ? "true" : "false")
            case let .int(i): append(String(i))
            case let .double(d):
                guard d.isFinite else {
                    if strict { throw PocketError(.schemaMappingFailed, "can't write the non-finite number \(d) as JSON") }
                    append("null")
                    return
                }
                append(d.rounded() == d && abs(d) < 1e15 ? String(Int(d)) + ".0" : String(d))
            case let .string(s): writeString(s)
            case let .array(elements):
                out.append(UInt8(ascii: "["))
                if elements.isEmpty { out.append(UInt8(ascii: "]")); return }
                indent += 1
                for (n, element) in elements.enumerated() {
                    if n > 0 { out.append(UInt8(ascii: ",")) }
                    newline()
                    excerpt?.path.append(.index(n))
                    try write(element, strict: strict)
                    excerpt?.path.removeLast()
                }
                indent -= 1
                newline()
                out.append(UInt8(ascii: "]"))
            case let .object(object):
                out.append(UInt8(ascii: "{"))
                if object.count == 0 { out.append(UInt8(ascii: "}")); return }
                indent += 1
                for (n, member) in object.members.enumerated() {
                    if n > 0 { out.append(UInt8(ascii: ",")) }
                    newline()
                    writeString(member.key)
                    out.append(UInt8(ascii: ":"))
                    if pretty { out.append(0x20) }
                    excerpt?.path.append(.key(member.key))
                    try write(member.value, strict: strict)
                    excerpt?.path.removeLast()
                }
                indent -= 1
                newline()
                out.append(UInt8(ascii: "}"))
            case let .mapped(box):
                if strict {
                    throw PocketError(.schemaMappingFailed,
                                      "a \(type(of: box.value)) value has no JSON form without a schema tag that transforms it")
                }
                writeString("<\(box.value)>")
            }
        }

        mutating func append(_ s: String) { out.append(contentsOf: s.utf8) }

        mutating func writeString(_ s: String) {
            out.append(UInt8(ascii: "\""))
            for byte in s.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out.append(0x5C); out.append(byte)
                case UInt8(ascii: "\\"): out.append(0x5C); out.append(byte)
                case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
                case ..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: Array("\\u00".utf8))
                    out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 0xF)])
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
    }
}

extension PocketJSONValue {
    /// Compact JSON text as UTF-8. Throws `.schemaMappingFailed` when the tree
    /// still holds a mapped value (encode those through a schema:
    /// `PocketSchemaRegistry.encode`) or a non-finite number.
    public func jsonData() throws -> Data { Data(try JSONWriter.bytes(self)) }

    /// Pretty-printed JSON text (two-space indents), for logs and messages.
    public var prettyPrinted: String { JSONWriter.string(self, pretty: true) }
}
