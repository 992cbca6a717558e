/// Percent-encoding (RFC 3986 §2.1) over UTF-8 bytes, with the sets Pocket needs.
enum PercentEncoding {
    /// RFC 3986 §2.3 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
    static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// RFC 3986 §2.2 sub-delims: "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "=".
    static func isSubDelimiter(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    /// Characters a literal path may carry as they are: pchar and "/".
    static func isPathLiteral(_ b: UInt8) -> Bool {
        isUnreserved(b) || isSubDelimiter(b) || b == UInt8(ascii: ":") || b == UInt8(ascii: "@")
            || b == UInt8(ascii: "/")
    }

    /// Characters a literal query may carry as they are (RFC 3986 §3.4).
    static func isQueryLiteral(_ b: UInt8) -> Bool {
        isPathLiteral(b) || b == UInt8(ascii: "?")
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b | 0x20)
    }

    /// Text written by hand (a path or query in a template): characters in
    /// `allowed` and existing `%XX` escapes kept (it is taken as already
    /// encoded), anything else encoded, a stray `%` included.
    static func encodeLiteral(_ text: String, allowed: (UInt8) -> Bool) -> String {
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        for (i, b) in bytes.enumerated() {
            let escape = b == UInt8(ascii: "%") && i + 2 < bytes.count && isHexDigit(bytes[i + 1]) && isHexDigit(bytes[i + 2])
            if allowed(b) || escape {
                out.append(b)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let hex = Array("0123456789ABCDEF".utf8)

    /// `text` with every byte outside `allowed` written as `%XX`;
    /// `spaceAsPlus` writes a space as `+` (HTML form encoding).
    static func encode(_ text: String, spaceAsPlus: Bool = false, allowed: (UInt8) -> Bool = isUnreserved) -> String {
        if text.utf8.allSatisfy(allowed) { return text }
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count * 3)
        for b in text.utf8 {
            if allowed(b) {
                out.append(b)
            } else if spaceAsPlus && b == UInt8(ascii: " ") {
                out.append(UInt8(ascii: "+"))
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One path segment from a value: everything but unreserved characters
    /// encoded (so "/", "?", "#", "%" and "," inside a value cannot change the
    /// path), and "." / ".." written as "%2E" / "%2E%2E" so they are never dot segments.
    static func pathSegment(_ text: String) -> String {
        if text == "." { return "%2E" }
        if text == ".." { return "%2E%2E" }
        return encode(text)
    }
}

/// How parameters become a query string (or an
/// `application/x-www-form-urlencoded` body).
///
/// Keys and values are percent-encoded per RFC 3986: everything but the
/// unreserved characters (`A–Z a–z 0–9 - . _ ~`) is written `%XX` in UTF-8,
/// brackets of nested keys included (`a%5B%5D=1` on the wire is `a[]=1`).
/// Parameters are written in key order, so a request built twice has the
/// same URL (and the same hash). `.null` values are left out.
///
/// ```swift
/// var encoding = PocketQueryEncoding()
/// encoding.arrayStyle = .commaSeparated         // ids=1,2
/// ```
public struct PocketQueryEncoding: Sendable, Hashable, Codable {
    /// How an array value is written.
    public enum ArrayStyle: String, Sendable, Hashable, Codable {
        /// `a[]=1&a[]=2` (Rails, PHP, AFNetworking's default).
        case brackets
        /// `a[0]=1&a[1]=2`.
        case indexed
        /// `a=1&a=2` (Go, Python, most Java servers).
        case repeated
        /// `a=1,2`: one field, elements comma-joined (a comma inside an element is `%2C`).
        case commaSeparated
    }

    /// How a boolean value is written.
    public enum BoolStyle: String, Sendable, Hashable, Codable {
        /// `true` / `false`.
        case literal
        /// `1` / `0`.
        case numeric
    }

    /// `.brackets` by default: the convention of AFNetworking and MTPocket's
    /// Rails backends, and the only style that keeps a one-element array an
    /// array on those servers.
    public var arrayStyle: ArrayStyle
    /// `.literal` (`true`/`false`) by default: what JSON-minded APIs expect.
    public var boolStyle: BoolStyle

    /// Brackets for arrays and `true`/`false` unless told otherwise.
    public init(arrayStyle: ArrayStyle = .brackets, boolStyle: BoolStyle = .literal) {
        self.arrayStyle = arrayStyle
        self.boolStyle = boolStyle
    }

    /// `parameters` as `key=value` pairs joined with `&`, already
    /// percent-encoded; empty for no (or only null) parameters.
    ///
    /// Nested dictionaries are written `a[b]=1`; arrays follow `arrayStyle`,
    /// except that containers inside an array are always indexed
    /// (`a[0][b]=1`), since the flat styles cannot express them. An empty
    /// array or dictionary writes nothing, in every style.
    public func encode(_ parameters: [String: PocketParameterValue]) -> String {
        encode(parameters, spaceAsPlus: false)
    }

    func encode(_ parameters: [String: PocketParameterValue], spaceAsPlus: Bool) -> String {
        var out = ""
        for key in parameters.keys.sorted() {
            append(parameters[key]!, key: key, to: &out, spaceAsPlus: spaceAsPlus)
        }
        return out
    }

    private func scalar(_ value: PocketParameterValue) -> String? {
        switch value {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .double(let d): return d.description
        case .bool(let b): return boolStyle == .literal ? (b ? "true" : "false") : (b ? "1" : "0")
        case .array, .dictionary, .null: return nil
        }
    }

    private func append(_ value: PocketParameterValue, key: String, to out: inout String, spaceAsPlus: Bool) {
        func field(_ k: String, _ v: String) {
            if !out.isEmpty { out += "&" }
            out += PercentEncoding.encode(k, spaceAsPlus: spaceAsPlus)
            out += "="
            out += PercentEncoding.encode(v, spaceAsPlus: spaceAsPlus)
        }
        switch value {
        case .null:
            return
        case .dictionary(let d):
            for k in d.keys.sorted() { append(d[k]!, key: "\(key)[\(k)]", to: &out, spaceAsPlus: spaceAsPlus) }
        case .array(let elements):
            let nested = elements.contains { if case .array = $0 { return true }; if case .dictionary = $0 { return true }; return false }
            let style = nested ? .indexed : arrayStyle
            switch style {
            case .brackets:
                for e in elements { append(e, key: key + "[]", to: &out, spaceAsPlus: spaceAsPlus) }
            case .indexed:
                for (i, e) in elements.enumerated() { append(e, key: "\(key)[\(i)]", to: &out, spaceAsPlus: spaceAsPlus) }
            case .repeated:
                for e in elements { append(e, key: key, to: &out, spaceAsPlus: spaceAsPlus) }
            case .commaSeparated:
                let parts = elements.compactMap(scalar)
                if parts.isEmpty { return }
                if !out.isEmpty { out += "&" }
                out += PercentEncoding.encode(key, spaceAsPlus: spaceAsPlus) + "="
                out += parts.map { PercentEncoding.encode($0, spaceAsPlus: spaceAsPlus) }.joined(separator: ",")
            }
        default:
            field(key, scalar(value)!)
        }
    }
}
