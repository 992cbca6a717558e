#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketJSONValue {
    /// Parses UTF-8 JSON text (RFC 8259): one value, any type at the top.
    ///
    /// Strict: no comments, no trailing commas, no leading zeros, no
    /// unescaped control characters, no key twice in a dictionary, valid
    /// UTF-8 only. Throws
    /// `.malformedJSON` with the line and column of the first error, and
    /// `.jsonNestingTooDeep` past `maxDepth` nested arrays and dictionaries
    /// (128 by default, as serde_json: deeper than any real API, shallow
    /// enough that the recursive parser, validator and mappers stay well
    /// inside a task's stack, even in a debug build).
    public init(parsing data: Data, maxDepth: Int = PocketJSONParser.defaultMaxDepth) throws {
        self = try data.withUnsafeBytes { try PocketJSONParser.parse($0, maxDepth: maxDepth) }
    }

    /// Parses JSON text from a string (see `init(parsing:maxDepth:)` for `Data`).
    public init(parsing text: String, maxDepth: Int = PocketJSONParser.defaultMaxDepth) throws {
        var text = text
        self = try text.withUTF8 { try PocketJSONParser.parse(UnsafeRawBufferPointer($0), maxDepth: maxDepth) }
    }
}

/// A strict, allocation-lean JSON parser over a byte buffer: a pure function
/// of its input, so a fuzz harness can drive it directly.
public struct PocketJSONParser {
    /// Nesting depth of arrays and dictionaries allowed by default, 128:
    /// the parser, the schema validator and the writer all recurse per
    /// level, and a task's stack is far smaller than a main thread's.
    public static let defaultMaxDepth = 128

    private let bytes: UnsafeRawBufferPointer
    private var i = 0
    private var depth = 0
    private let maxDepth: Int
    private var scratch: [UInt8] = []

    private init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses `bytes` as one JSON value; throws `PocketError` (`.malformedJSON`,
    /// `.jsonNestingTooDeep`). Never crashes on any input.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws -> PocketJSONValue {
        var parser = PocketJSONParser(bytes, maxDepth: maxDepth)
        // A UTF-8 byte order mark may precede the text (RFC 8259 §8.1 lets parsers ignore it).
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.i = 3 }
        parser.skipWhitespace()
        guard parser.i < bytes.count else {
            throw parser.failure(bytes.isEmpty ? "empty body, expected a JSON value" : "expected a JSON value")
        }
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.i < bytes.count { throw parser.failure("unexpected text after the JSON value") }
        return value
    }

    @inline(__always) private var current: UInt8 { bytes[i] }

    @inline(__always) private mutating func skipWhitespace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws -> PocketJSONValue {
        switch current {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character \(describe(current)), expected a JSON value")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let n = literal.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw failure("unexpected end of input in a literal") }
        let p = literal.utf8Start
        for k in 0..<n where bytes[i + k] != p[k] {
            i += k
            throw failure("invalid literal, expected '\(literal)'")
        }
        i += n
    }

    private mutating func enter() throws {
        depth += 1
        if depth > maxDepth {
            throw PocketError(.jsonNestingTooDeep,
                              "JSON nests deeper than \(maxDepth) arrays and dictionaries at \(location(i))")
        }
    }

    private mutating func parseObject() throws -> PocketJSONValue {
        try enter()
        i += 1
        var members: [(key: String, value: PocketJSONValue)] = []
        var seen: Set<String>? // past a few keys, duplicates are found by hash
        skipWhitespace()
        if i < bytes.count, current == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return .object(PocketJSONObject(members: members))
        }
        while true {
            skipWhitespace()
            guard i < bytes.count else { throw failure("unexpected end of input in a dictionary") }
            guard current == UInt8(ascii: "\"") else {
                throw failure("unexpected character \(describe(current)), expected a key in quotes")
            }
            let keyStart = i
            let key = try parseString()
            // A key twice would let a validator check one value and a mapper
            // read the other: rejected (RFC 8259 §4: names SHOULD be unique).
            if members.count < 16 {
                for member in members where member.key == key { throw duplicate(key, at: keyStart) }
            } else {
                if seen == nil { seen = Set(members.map(\.key)) }
                guard seen!.insert(key).inserted else { throw duplicate(key, at: keyStart) }
            }
            skipWhitespace()
            guard i < bytes.count, current == UInt8(ascii: ":") else {
                throw failure(i < bytes.count ? "expected ':' after a key" : "unexpected end of input in a dictionary")
            }
            i += 1
            skipWhitespace()
            guard i < bytes.count else { throw failure("unexpected end of input in a dictionary") }
            let value = try parseValue()
            members.append((key: key, value: value))
            skipWhitespace()
            guard i < bytes.count else { throw failure("unexpected end of input in a dictionary") }
            if current == UInt8(ascii: ",") { i += 1; continue }
            if current == UInt8(ascii: "}") { i += 1; break }
            throw failure("unexpected character \(describe(current)), expected ',' or '}'")
        }
        depth -= 1
        return .object(PocketJSONObject(members: members))
    }

    private mutating func parseArray() throws -> PocketJSONValue {
        try enter()
        i += 1
        var elements: [PocketJSONValue] = []
        skipWhitespace()
        if i < bytes.count, current == UInt8(ascii: "]") {
            i += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            guard i < bytes.count else { throw failure("unexpected end of input in an array") }
            elements.append(try parseValue())
            skipWhitespace()
            guard i < bytes.count else { throw failure("unexpected end of input in an array") }
            if current == UInt8(ascii: ",") { i += 1; continue }
            if current == UInt8(ascii: "]") { i += 1; break }
            throw failure("unexpected character \(describe(current)), expected ',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    private mutating func parseString() throws -> String {
        i += 1 // opening quote
        let start = i
        var high: UInt8 = 0 // OR of every byte: < 0x80 means ASCII, valid UTF-8 as it is
        // Fast path: no escapes.
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                let s = high < 0x80 ? String(decoding: raw, as: UTF8.self) : try makeString(raw, at: start)
                i += 1
                return s
            }
            high |= c
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw failure("unescaped control character \(describe(c)) in a string") }
            i += 1
        }
        guard i < bytes.count else { throw failure("unexpected end of input in a string") }
        // Slow path: copy with escapes decoded.
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: bytes[start..<i])
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return try scratch.withUnsafeBytes { try makeString($0, at: start) }
            }
            if c < 0x20 { throw failure("unescaped control character \(describe(c)) in a string") }
            if c != UInt8(ascii: "\\") { scratch.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { break }
            switch bytes[i] {
            case UInt8(ascii: "\""): scratch.append(0x22)
            case UInt8(ascii: "\\"): scratch.append(0x5C)
            case UInt8(ascii: "/"): scratch.append(0x2F)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard i + 2 < bytes.count, bytes[i + 1] == UInt8(ascii: "\\"), bytes[i + 2] == UInt8(ascii: "u") else {
                        throw failure("unpaired UTF-16 surrogate in a \\u escape")
                    }
                    i += 2
                    let low = try parseHex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired UTF-16 surrogate in a \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw failure("unpaired UTF-16 surrogate in a \\u escape")
                }
                appendUTF8(scalar)
            default:
                throw failure("invalid escape \\\(describe(bytes[i]))")
            }
            i += 1
        }
        throw failure("unexpected end of input in a string")
    }

    /// Reads 4 hex digits after `\u`; leaves `i` on the last digit.
    private mutating func parseHex4() throws -> UInt32 {
        guard i + 4 < bytes.count else { throw failure("unexpected end of input in a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            i += 1
            let c = bytes[i]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw failure("invalid hex digit \(describe(c)) in a \\u escape")
            }
            value = value << 4 | digit
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80: scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6)); scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12)); scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18)); scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F)); scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    private func makeString(_ raw: UnsafeRawBufferPointer, at start: Int) throws -> String {
        guard let s = String(validating: raw.bindMemory(to: UInt8.self), as: UTF8.self) else { // rejects, never repairs
            throw PocketError(.malformedJSON, "Invalid JSON at \(location(start)): a string is not valid UTF-8")
        }
        return s
    }

    private mutating func parseNumber() throws -> PocketJSONValue {
        let start = i
        var negative = false
        if current == UInt8(ascii: "-") {
            negative = true
            i += 1
            guard i < bytes.count, isDigit(current) else { throw failure("expected a digit after '-'") }
        }
        var integral = true
        var magnitude: UInt64 = 0
        var digits = 0
        if current == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, isDigit(current) { throw failure("leading zero in a number") }
            digits = 1
        } else {
            while i < bytes.count, isDigit(current) {
                if digits < 18 { magnitude = magnitude &* 10 &+ UInt64(current - UInt8(ascii: "0")) }
                digits += 1
                i += 1
            }
        }
        if i < bytes.count, current == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard i < bytes.count, isDigit(current) else { throw failure("expected a digit after '.'") }
            while i < bytes.count, isDigit(current) { i += 1 }
        }
        if i < bytes.count, current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < bytes.count, current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(current) else { throw failure("expected a digit in an exponent") }
            while i < bytes.count, isDigit(current) { i += 1 }
        }
        if integral, digits <= 18 {
            let value = Int(magnitude)
            return .int(negative ? -value : value)
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        if integral, let exact = Int(text) { return .int(exact) }
        guard let d = Double(text), d.isFinite else {
            throw PocketError(.malformedJSON, "Invalid JSON at \(location(start)): number \(text) is out of range")
        }
        if integral, d.rounded() == d, abs(d) < 9.2e18 { return .int(Int(d)) }
        return .double(d)
    }

    @inline(__always) private func isDigit(_ c: UInt8) -> Bool { c &- UInt8(ascii: "0") < 10 }

    private func describe(_ c: UInt8) -> String {
        (0x21..<0x7F).contains(c) ? "'\(Character(Unicode.Scalar(c)))'" : "0x" + String(c, radix: 16, uppercase: true)
    }

    /// "line L, column C" (1-based; columns count bytes) of offset `at`.
    private func location(_ at: Int) -> String {
        var line = 1, lineStart = 0
        let end = min(at, bytes.count)
        for k in 0..<end where bytes[k] == 0x0A {
            line += 1
            lineStart = k + 1
        }
        return "line \(line), column \(end - lineStart + 1)"
    }

    private func duplicate(_ key: String, at offset: Int) -> PocketError {
        PocketError(.malformedJSON, "Invalid JSON at \(location(offset)): duplicate key '\(key)' in a dictionary")
    }

    private func failure(_ what: String) -> PocketError {
        PocketError(.malformedJSON, "Invalid JSON at \(location(i)): \(what)")
    }
}
