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
