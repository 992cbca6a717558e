#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `Cache-Control` directives (RFC 9111 §5.2), names lowercased; a
/// directive with a field list (`no-cache="Set-Cookie"`) counts as the bare one.
struct CacheDirectives: Sendable {
    var values: [String: String?] = [:]

    init(_ headers: PocketHeaders) {
        for field in headers.values(for: "Cache-Control") {
            for part in Self.split(field) {
                let pieces = part.split(separator: "=", maxSplits: 1)
                guard let name = pieces.first?.trimmingSpaces.lowercased(), !name.isEmpty else { continue }
                var value = pieces.count > 1 ? pieces[1].trimmingSpaces : nil
                if let v = value, v.count >= 2, v.hasPrefix("\""), v.hasSuffix("\"") { value = String(v.dropFirst().dropLast()) }
                values[name] = value
            }
        }
        // RFC 9111 §5.4: Pragma: no-cache counts only without Cache-Control.
        if values.isEmpty, headers.values(for: "Pragma").contains(where: { $0.lowercased().contains("no-cache") }) {
            values["no-cache"] = .some(nil)
        }
    }

    /// Splits at commas outside quoted strings.
    static func split(_ field: String) -> [Substring] {
        var parts: [Substring] = []
        var start = field.startIndex, quoted = false
        var i = field.startIndex
        while i < field.endIndex {
            let c = field[i]
            if c == "\"" { quoted.toggle() }
            if c == ",", !quoted {
                parts.append(field[start..<i])
                start = field.index(after: i)
            }
            i = field.index(after: i)
        }
        parts.append(field[start...])
        return parts
    }

    func has(_ name: String) -> Bool { values[name] != nil }

    /// A delta-seconds value (RFC 9111 §1.2.2); an invalid one counts as 0
    /// (stale), a huge one is capped.
    func seconds(_ name: String) -> Double? {
        guard let entry = values[name] else { return nil }
        guard let text = entry, let n = Int(text), n >= 0 else { return 0 }
        return Double(min(n, 1 << 31))
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(self.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// HTTP dates as seconds since 1970 (the parser `Retry-After` uses).
enum HTTPDate {
    /// Seconds since 1970, or nil when `text` is not an HTTP date (RFC 9110 §5.6.7).
    static func parse(_ text: String?) -> Double? {
        text.flatMap { RetryAfter.httpDate($0)?.timeIntervalSince1970 }
    }
}

/// RFC 9111's rules over a stored response: may it be stored, how long it
/// is fresh, how old it is.
enum CacheRules {
    /// Statuses cacheable by default (RFC 9110 §15.1).
    static let cacheableByDefault: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Why `response` to `request` may not be stored, or nil when it may (RFC 9111 §3).
    static func refusal(request: PocketRequest, requestDirectives: CacheDirectives, response: PocketResponseHead,
                        directives: CacheDirectives, heuristic: Bool) -> String? {
        guard request.method == .get else { return "only GET responses are stored" }
        guard response.status >= 200, response.status != 206, response.status != 304 else { return "status \(response.status)" }
        if requestDirectives.has("no-store") || directives.has("no-store") { return "no-store" }
        if response.headers.values(for: "Vary").contains(where: { $0.contains("*") }) { return "Vary: *" }
        // RFC 9111 §3.5: a response to an authenticated request only when it says so.
        if request.headers.contains("Authorization"),
           !(directives.has("public") || directives.has("must-revalidate") || directives.has("s-maxage")) {
            return "an authenticated request's response without public, must-revalidate or s-maxage"
        }
        let explicit = directives.has("max-age") || response.headers.contains("Expires")
        guard explicit || cacheableByDefault.contains(response.status) || directives.has("public") else {
            return "status \(response.status) without explicit freshness"
        }
        let validators = response.headers.contains("ETag") || response.headers.contains("Last-Modified")
        if !explicit, !validators, !(heuristic && cacheableByDefault.contains(response.status)) {
            return "neither freshness nor validators"
        }
        return nil
    }

    /// The freshness lifetime in seconds (RFC 9111 §4.2.1): max-age, else
    /// Expires − Date, else (when enabled) 10% of Date − Last-Modified.
    static func lifetime(_ headers: PocketHeaders, directives: CacheDirectives, status: Int, heuristic: Bool,
                         responseTime: Double) -> Double {
        if let maxAge = directives.seconds("max-age") { return maxAge }
        let date = HTTPDate.parse(headers["Date"]) ?? responseTime
        if let expires = headers["Expires"] {
            guard let e = HTTPDate.parse(expires) else { return 0 } // invalid: already expired (§5.3)
            return max(0, e - date)
        }
        if heuristic, cacheableByDefault.contains(status), let modified = HTTPDate.parse(headers["Last-Modified"]), modified < date {
            return min((date - modified) / 10, 86_400)
        }
        return 0
    }

    /// The current age in seconds (RFC 9111 §4.2.3).
    static func age(_ headers: PocketHeaders, requestTime: Double, responseTime: Double, now: Double) -> Double {
        let date = HTTPDate.parse(headers["Date"]) ?? responseTime
        let apparent = max(0, responseTime - date)
        // delta-seconds (RFC 9111 §1.2.2): digits only; "-5", "1e3" or "nan" count as no Age.
        let ageValue = headers["Age"].flatMap { v in !v.isEmpty && v.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } ? Double(v) : nil } ?? 0
        let corrected = ageValue + max(0, responseTime - requestTime)
        return max(apparent, corrected) + max(0, now - responseTime)
    }
}
