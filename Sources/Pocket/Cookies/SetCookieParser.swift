#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A `Set-Cookie` field value parsed by RFC 6265 §5.2, before the store's
/// checks (§5.3): attribute values as the server sent them, the last of
/// each attribute winning.
struct SetCookieLine {
    var name: String
    var value: String
    /// `Expires`, parsed by §5.1.1 (an unparsable one is ignored).
    var expires: Date?
    /// `Max-Age` in seconds (≤ 0: already expired).
    var maxAge: Int64?
    /// `Domain`, lower case, a leading dot removed; nil when absent or empty.
    var domain: String?
    /// `Path` when it starts with `/`; nil (the default path) otherwise.
    var path: String?
    var secure = false
    var httpOnly = false
    var sameSite: PocketCookie.SameSite?

    /// Parses `string` (the field value); nil when §5.2 ignores the whole
    /// line: no `=` in the name-value pair, or an empty name.
    init?(_ string: String) {
        let bytes = Array(string.utf8)
        let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<semicolon]
        guard let eq = pair.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let name = Self.trimmed(pair[..<eq])
        guard !name.isEmpty else { return nil }
        self.name = String(decoding: name, as: UTF8.self)
        self.value = String(decoding: Self.trimmed(pair[(eq + 1)...]), as: UTF8.self)
        guard semicolon < bytes.endIndex else { return }
        for av in bytes[(semicolon + 1)...].split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false) {
            let eq = av.firstIndex(of: UInt8(ascii: "="))
            let key = String(decoding: Self.trimmed(av[..<(eq ?? av.endIndex)]), as: UTF8.self).lowercased()
            let raw = eq.map { Self.trimmed(av[($0 + 1)...]) } ?? []
            switch key {
            case "expires":
                // An unparsable date leaves the attribute out (§5.2.1).
                if let date = Self.parseDate(raw) { expires = date }
            case "max-age":
                if let delta = Self.parseMaxAge(raw) { maxAge = delta }
            case "domain":
                // Empty: the attribute is ignored (§5.2.3's SHOULD); "."
                // is an empty cookie-domain, so the cookie is host-only.
                if raw.isEmpty { break }
                var d = raw[...]
                if d.first == UInt8(ascii: ".") { d = d.dropFirst() }
                domain = d.isEmpty ? nil : String(decoding: d, as: UTF8.self).lowercased()
            case "path":
                // Empty or not starting with "/": the default path (§5.2.4).
                path = raw.first == UInt8(ascii: "/") ? String(decoding: raw, as: UTF8.self) : nil
            case "secure":
                secure = true
            case "httponly":
                httpOnly = true
            case "samesite":
                switch String(decoding: raw, as: UTF8.self).lowercased() {
                case "strict": sameSite = .strict
                case "lax": sameSite = .lax
                case "none": sameSite = .unrestricted
                default: sameSite = nil // an unknown value: as if absent (RFC 6265bis)
                }
            default:
                break // unknown attributes are ignored
            }
        }
    }

    /// Without leading and trailing spaces and tabs (WSP).
    private static func trimmed(_ s: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var s = s
        while let f = s.first, f == 0x20 || f == 0x09 { s = s.dropFirst() }
        while let l = s.last, l == 0x20 || l == 0x09 { s = s.dropLast() }
        return s
    }

    /// §5.2.2: an optional `-` and digits only; anything else ignores the attribute.
    static func parseMaxAge(_ raw: ArraySlice<UInt8>) -> Int64? {
        guard let first = raw.first, first == UInt8(ascii: "-") || (0x30...0x39).contains(first) else { return nil }
        let digits = first == UInt8(ascii: "-") ? raw.dropFirst() : raw
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        if first == UInt8(ascii: "-") { return 0 } // "less than or equal to zero": the earliest time
        var n: Int64 = 0
        for d in digits {
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int64(d - 0x30))
            if o1 || o2 { return Int64.max }
            n = a
        }
        return n
    }

    // MARK: dates (RFC 6265 §5.1.1)

    private static func isDelimiter(_ c: UInt8) -> Bool {
        c == 0x09 || (0x20...0x2F).contains(c) || (0x3B...0x40).contains(c) || (0x5B...0x60).contains(c)
            || (0x7B...0x7E).contains(c)
    }

    private static func isDigit(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) }

    /// `1*max DIGIT` at the start of `token` followed by its end or a
    /// non-digit: the number and where the digits end.
    private static func leadingNumber(_ token: ArraySlice<UInt8>, min: Int, max: Int) -> (Int, ArraySlice<UInt8>.Index)? {
        var i = token.startIndex, n = 0, count = 0
        while i < token.endIndex, isDigit(token[i]) {
            count += 1
            if count > max { return nil }
            n = n * 10 + Int(token[i] - 0x30)
            i += 1
        }
        guard count >= min else { return nil }
        return (n, i)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The cookie-date algorithm: the tokens between delimiters, the first
    /// of each kind taken (time, day of month, month, year), two-digit years
    /// mapped to 1970-2069; nil for a date the algorithm fails.
    static func parseDate(_ raw: ArraySlice<UInt8>) -> Date? {
        var time: (Int, Int, Int)?, day: Int?, month: Int?, year: Int?
        for token in raw.split(whereSeparator: isDelimiter) {
            if time == nil, let t = parseTime(token) {
                time = t
                continue
            }
            if day == nil, let (d, _) = leadingNumber(token, min: 1, max: 2) {
                day = d
                continue
            }
            if month == nil, token.count >= 3 {
                let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
                if let m = months.firstIndex(of: prefix) {
                    month = m + 1
                    continue
                }
            }
            if year == nil, let (y, _) = leadingNumber(token, min: 2, max: 4) {
                year = y
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        guard day <= CivilDate.daysIn(month: month, year: year) else { return nil }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `hms-time`: 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT, then the end or a non-digit.
    private static func parseTime(_ token: ArraySlice<UInt8>) -> (Int, Int, Int)? {
        var rest = token
        var fields: [Int] = []
        for i in 0..<3 {
            guard let (n, end) = leadingNumber(rest, min: 1, max: 2) else { return nil }
            fields.append(n)
            rest = rest[end...]
            if i < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        return (fields[0], fields[1], fields[2])
    }
}
