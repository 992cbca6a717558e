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

/// An RFC 6265 cookie store: what a client keeps from `Set-Cookie` fields
/// and sends back in `Cookie`.
///
/// Opt in per client (`PocketClient.Configuration.cookies`); one store may
/// serve several clients, and any number of tasks at once (it is
/// `Sendable`; one lock guards it). With a store, every hop of the request
/// path (each redirect, each retry, the answer to a 401) sends the cookies
/// that match its URL and stores what its response sets, so a cookie set
/// by a 302 goes with the request to its `Location`.
///
/// ```swift
/// let jar = PocketCookieStore()
/// var config = PocketClient.Configuration()
/// config.cookies = jar
/// let client = try PocketClient(configuration: config)
/// ```
///
/// **What it follows (RFC 6265).** Host-only cookies (no `Domain`) go to
/// their host only; `Domain=example.com` to it and its subdomains, when the
/// request host domain-matches it (§5.1.3). `Path` as given when it starts
/// with `/`, else the request's default path (§5.1.4); a cookie goes to the
/// paths under its own. `Secure` cookies go over https only. `Max-Age` wins
/// over `Expires`; dates are parsed by §5.1.1's algorithm; a cookie set with
/// a past expiry deletes the stored one of the same name, domain and path.
/// The `Cookie` field lists longer paths first, then earlier-created
/// cookies first (§5.4); the cookies read from a file, created in one
/// instant, are ordered among themselves as curl orders them: the longer
/// domain, then the longer name, then the file's later line first. A `Domain` that is a public suffix (`com`,
/// `co.uk`, `github.io`, checked with libpsl and the distribution's list)
/// is refused, unless it is the request host itself: the cookie is then
/// host-only (§5.3 step 5).
///
/// **From RFC 6265bis, as curl and browsers do:** a `Secure` cookie is only
/// stored from https; a cookie from http cannot replace or shadow a
/// `Secure` one of the same name; `__Secure-` names need `Secure`, and
/// `__Host-` names need `Secure`, no `Domain` and `Path=/` (the prefixes in
/// any case); a host-only cookie and a `Domain` one of the same name, domain
/// and path are two cookies. `SameSite` is
/// parsed and kept but not enforced: it protects a browser's cross-site
/// requests, and a client that is not a browser has no site that starts
/// them. `HttpOnly` is kept (and exported); Pocket is an HTTP API, so such
/// cookies are sent.
///
/// **Limits** (`Limits`, each with its own outcome): a cookie whose name
/// and value together exceed 4096 bytes is refused (`.tooLarge`, RFC 6265bis
/// §5.6); past 50 cookies for one domain, or
/// 3000 in all, cookies are evicted as §5.3 says: expired ones first, then
/// those least recently used (`.stored(_, evicted:)` lists them).
///
/// **A `Cookie` field the request sets itself** is kept: the store's
/// cookies come first and the request's own pairs after them, in one field;
/// a stored cookie whose name the request's field already sets is left
/// out, so the caller's value wins. (A cross-origin redirect drops the
/// request's own `Cookie` field, as before; the store's cookies are chosen
/// again for each hop's URL.)
public final class PocketCookieStore: Sendable {
    /// How much the store keeps. RFC 6265 §6.1 asks for at least these.
    public struct Limits: Sendable, Hashable {
        /// The longest cookie, in bytes: its name and value together (RFC
        /// 6265bis §5.6), whether from a `Set-Cookie` field (the attributes
        /// are not counted), added or read from a cookie file, so that every
        /// cookie stored survives its own file. Longer ones are refused (`.tooLarge`).
        public var maxCookieBytes = 4096
        /// Cookies per domain (the cookie's domain field); past it the
        /// domain's expired, then least recently used cookies are evicted.
        public var maxCookiesPerDomain = 50
        /// Cookies in all; past it expired, then least recently used ones are evicted.
        public var maxCookies = 3000

        /// RFC 6265 §6.1's minimums by default.
        public init(maxCookieBytes: Int = 4096, maxCookiesPerDomain: Int = 50, maxCookies: Int = 3000) {
            self.maxCookieBytes = maxCookieBytes
            self.maxCookiesPerDomain = maxCookiesPerDomain
            self.maxCookies = maxCookies
        }
    }

    /// Why a cookie was not stored.
    public enum Rejection: Sendable, Hashable {
        /// No `=` in the name-value pair, an empty name, or a control
        /// character in the name, value, domain or path (RFC 6265 §5.2).
        case malformed
        /// Longer than `Limits.maxCookieBytes` (its length in bytes).
        case tooLarge(bytes: Int)
        /// `Domain` is a public suffix other than the request host.
        case publicSuffix(domain: String)
        /// The request host does not domain-match `Domain` (or is an IP address).
        case domainMismatch(domain: String)
        /// `Secure` set over http (RFC 6265bis).
        case secureFromInsecureOrigin
        /// From http, with the name of a stored `Secure` cookie it would replace or shadow (RFC 6265bis).
        case shadowsSecureCookie
        /// A `__Secure-` or `__Host-` name without what the prefix requires (RFC 6265bis).
        case prefixRequirements
    }

    /// What storing one cookie did.
    public enum Outcome: Sendable, Hashable {
        /// Stored (new, or replacing one of the same name, domain and path),
        /// and the cookies evicted to stay within the limits.
        case stored(PocketCookie, evicted: [PocketCookie])
        /// Already expired: the stored cookie of the same name, domain and
        /// path was removed (`removed` false: there was none).
        case expired(removed: Bool)
        /// Not stored.
        case rejected(Rejection)
    }

    /// What `importNetscape` read.
    public struct ImportSummary: Sendable, Hashable {
        /// Cookies stored.
        public var imported = 0
        /// Lines that are neither a cookie, a comment nor empty (skipped).
        public var malformed = 0
        /// Their 1-based line numbers (the first 100).
        public var malformedLines: [Int] = []
        /// Cookies already expired (skipped).
        public var expired = 0
        /// Session cookies left out (`dropSessionCookies`).
        public var sessionCookiesDropped = 0
        /// Cookies the store refused (a limit; a `Set-Cookie:` line's rules).
        public var rejected = 0
        /// Nothing read yet.
        public init() {}
    }

    /// The public-suffix library and its list, e.g. `libpsl/0.21.2
    /// (/usr/share/publicsuffix/public_suffix_list.dafsa)` (`pocket --version`).
    public static var publicSuffixLibrary: String {
        "libpsl/\(PublicSuffixList.libraryVersion) (\(PublicSuffixList.source))"
    }

    /// The store's limits.
    public let limits: Limits
    /// Whether `localhost` (and `*.localhost`), 127.0.0.0/8 and `::1` count
    /// as secure like https: `Secure` cookies are then stored from and sent
    /// to them over http, as curl and browsers do for loopback. Off by
    /// default: RFC 6265 sends `Secure` cookies over https only.
    public let treatsLoopbackAsSecure: Bool
    private let clock: @Sendable () -> Date
    private let state = Lock(State())

    private struct State {
        /// Cookies by their domain field.
        var byDomain: [String: [PocketCookie]] = [:]
        var count = 0
        var sequence: UInt64 = 0
    }

    /// A store with `limits`; `clock` tells the time (tests set it).
    public init(limits: Limits = Limits(), treatsLoopbackAsSecure: Bool = false,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.limits = limits
        self.treatsLoopbackAsSecure = treatsLoopbackAsSecure
        self.clock = clock
    }

    // MARK: receiving

    /// Stores the cookie of one `Set-Cookie` field value received from `url`
    /// (RFC 6265 §5.2 and §5.3).
    @discardableResult
    public func store(_ setCookie: String, from url: URL) -> Outcome {
        let origin = Origin(url)
        let now = clock()
        return state.withLock { store(setCookie, origin: origin, now: now, in: &$0) }
    }

    /// Stores the cookies of every `Set-Cookie` field in `headers`, received from `url`.
    @discardableResult
    public func store(_ headers: PocketHeaders, from url: URL) -> [Outcome] {
        let lines = headers.values(for: "Set-Cookie")
        guard !lines.isEmpty else { return [] }
        let origin = Origin(url)
        let now = clock()
        return state.withLock { s in lines.map { store($0, origin: origin, now: now, in: &s) } }
    }

    /// Adds `cookie` as it is (replacing one of the same name, domain and
    /// path), within the limits; no origin rules apply.
    @discardableResult
    public func add(_ cookie: PocketCookie) -> Outcome {
        let now = clock()
        return state.withLock { s in
            if let problem = Self.check(cookie) { return .rejected(problem) }
            let size = cookie.name.utf8.count + cookie.value.utf8.count
            if size > limits.maxCookieBytes { return .rejected(.tooLarge(bytes: size)) }
            return insert(cookie, now: now, sequence: nil, in: &s)
        }
    }

    private func store(_ line: String, origin: Origin, now: Date, in s: inout State) -> Outcome {
        guard let parsed = SetCookieLine(line) else { return .rejected(.malformed) }
        // RFC 6265bis §5.6: the name and the value together, not the attributes.
        let size = parsed.name.utf8.count + parsed.value.utf8.count
        if size > limits.maxCookieBytes { return .rejected(.tooLarge(bytes: size)) }
        // §5.3 steps 4-6: the domain, refusing public suffixes. A trailing
        // dot stays: `example.com.` does not domain-match `example.com`.
        var hostOnly = true
        var domain = origin.host
        if let attribute = parsed.domain {
            if !origin.isIP, PublicSuffixList.isPublicSuffix(attribute) {
                guard attribute == origin.host else { return .rejected(.publicSuffix(domain: attribute)) }
                // The host itself (e.g. `localhost`): a host-only cookie.
            } else {
                guard Self.domainMatches(origin.host, attribute, hostIsIP: origin.isIP) else {
                    return .rejected(.domainMismatch(domain: attribute))
                }
                hostOnly = false
                domain = attribute
            }
        }
        // RFC 6265bis: Secure only from a secure origin; prefixes.
        let secureOrigin = isSecure(origin)
        if parsed.secure && !secureOrigin { return .rejected(.secureFromInsecureOrigin) }
        // Prefixes are matched without regard to case (RFC 6265bis §4.1.3):
        // `__host-` asks for what `__Host-` does.
        let name = parsed.name.lowercased()
        if name.hasPrefix("__secure-") && !parsed.secure { return .rejected(.prefixRequirements) }
        if name.hasPrefix("__host-") && (!parsed.secure || !hostOnly || parsed.path != "/") {
            return .rejected(.prefixRequirements)
        }
        var expires: Date?
        if let maxAge = parsed.maxAge {
            // At most 400 years ahead: a date every consumer can still represent.
            expires = maxAge <= 0 ? Date(timeIntervalSince1970: 0)
                : now.addingTimeInterval(min(TimeInterval(maxAge), 400 * 365 * 86_400))
        } else if let date = parsed.expires {
            expires = date
        }
        let cookie = PocketCookie(name: parsed.name, value: parsed.value, domain: domain, hostOnly: hostOnly,
                                  path: parsed.path ?? Self.defaultPath(origin.path), secure: parsed.secure,
                                  httpOnly: parsed.httpOnly, sameSite: parsed.sameSite, expires: expires, created: now)
        if let problem = Self.check(cookie) { return .rejected(problem) }
        if !cookie.secure && !secureOrigin && shadowsSecure(cookie, in: s) { return .rejected(.shadowsSecureCookie) }
        if cookie.isExpired(at: now) {
            return .expired(removed: remove(matching: cookie, in: &s))
        }
        return insert(cookie, now: now, sequence: nil, in: &s)
    }

    /// Control characters (tab included: it would break the Netscape file),
    /// an empty name, or a domain that is no host name or IP address (a
    /// cookie file's line can name anything, and one such as
    /// `Set-Cookie: x` would be written back as a line that reads as a
    /// header).
    private static func check(_ cookie: PocketCookie) -> Rejection? {
        func bad(_ s: String) -> Bool { s.utf8.contains { $0 < 0x20 || $0 == 0x7F } }
        if cookie.name.isEmpty || bad(cookie.name) || bad(cookie.value) || bad(cookie.domain) || bad(cookie.path)
            || cookie.domain.isEmpty || !isHostName(cookie.domain) {
            return .malformed
        }
        return nil
    }

    /// Letters, digits, `-`, `_` and `.` with no empty label but the
    /// root's (a name, or an IPv4 address), or an IPv6 address (brackets
    /// allowed), as `inet_pton` reads one. A cookie's domain has lost one
    /// leading dot already (`PocketCookie`): a second, as in a cookie
    /// file's `..example.com`, would be taken for a domain cookie's mark
    /// when the file is read again.
    private static func isHostName(_ domain: String) -> Bool {
        let name = domain.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39)
            || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E || $0 >= 0x80 }
        if name { return domain.utf8.first != 0x2E && !domain.contains("..") }
        var inner = Substring(domain)
        if inner.hasPrefix("[") && inner.hasSuffix("]") { inner = inner.dropFirst().dropLast() }
        var address = in6_addr()
        return inet_pton(AF_INET6, String(inner), &address) == 1
    }

    /// RFC 6265bis §5.7 ("leave secure cookies alone"): a stored Secure
    /// cookie of the same name whose domain and path the new one overlaps.
    private func shadowsSecure(_ cookie: PocketCookie, in s: State) -> Bool {
        for bucket in s.byDomain.values {
            for old in bucket where old.secure && old.name == cookie.name {
                let domains = Self.domainMatches(old.domain, cookie.domain, hostIsIP: false)
                    || Self.domainMatches(cookie.domain, old.domain, hostIsIP: false)
                if domains && Self.pathMatches(cookie.path, old.path) { return true }
            }
        }
        return false
    }

    /// §5.3 steps 11-12 and the limits: replaces a cookie of the same
    /// identity (keeping its creation time), then evicts.
    private func insert(_ cookie: PocketCookie, now: Date, sequence: UInt64?, in s: inout State) -> Outcome {
        var cookie = cookie
        cookie.lastAccessed = now
        var bucket = s.byDomain[cookie.domain] ?? []
        if let i = bucket.firstIndex(where: { $0.sameIdentity(as: cookie) }) {
            cookie.created = bucket[i].created
            cookie.sequence = bucket[i].sequence
            bucket[i] = cookie
            s.byDomain[cookie.domain] = bucket
            return .stored(cookie, evicted: [])
        }
        if let sequence {
            cookie.sequence = sequence
        } else {
            s.sequence += 1
            cookie.sequence = s.sequence
        }
        bucket.append(cookie)
        s.count += 1
        var evicted: [PocketCookie] = []
        // Per domain: its expired cookies, then its least recently used.
        if bucket.count > limits.maxCookiesPerDomain {
            var i = 0
            while bucket.count > limits.maxCookiesPerDomain, i < bucket.count {
                if bucket[i].isExpired(at: now) { evicted.append(bucket.remove(at: i)) } else { i += 1 }
            }
            while bucket.count > limits.maxCookiesPerDomain, let i = Self.leastRecentlyUsed(bucket, sparing: cookie) {
                evicted.append(bucket.remove(at: i))
            }
            s.count -= evicted.count
        }
        s.byDomain[cookie.domain] = bucket.isEmpty ? nil : bucket
        // In all: expired anywhere, then the least recently used anywhere.
        if s.count > limits.maxCookies {
            for key in Array(s.byDomain.keys) where s.count > limits.maxCookies {
                var b = s.byDomain[key]!
                var i = 0
                while s.count > limits.maxCookies, i < b.count {
                    if b[i].isExpired(at: now) {
                        evicted.append(b.remove(at: i))
                        s.count -= 1
                    } else {
                        i += 1
                    }
                }
                s.byDomain[key] = b.isEmpty ? nil : b
            }
            while s.count > limits.maxCookies {
                var oldest: (key: String, index: Int, cookie: PocketCookie)?
                for (key, b) in s.byDomain {
                    for (i, c) in b.enumerated() where c.sequence != cookie.sequence {
                        if oldest == nil || Self.older(c, than: oldest!.cookie) { oldest = (key, i, c) }
                    }
                }
                guard let oldest else { break }
                s.byDomain[oldest.key]!.remove(at: oldest.index)
                if s.byDomain[oldest.key]!.isEmpty { s.byDomain[oldest.key] = nil }
                evicted.append(oldest.cookie)
                s.count -= 1
            }
        }
        return .stored(cookie, evicted: evicted)
    }

    private static func older(_ a: PocketCookie, than b: PocketCookie) -> Bool {
        a.lastAccessed != b.lastAccessed ? a.lastAccessed < b.lastAccessed : a.sequence < b.sequence
    }

    private static func leastRecentlyUsed(_ bucket: [PocketCookie], sparing new: PocketCookie) -> Int? {
        var best: Int?
        for (i, c) in bucket.enumerated() where c.sequence != new.sequence {
            if best == nil || older(c, than: bucket[best!]) { best = i }
        }
        return best
    }

    @discardableResult
    private func remove(matching cookie: PocketCookie, in s: inout State) -> Bool {
        guard var bucket = s.byDomain[cookie.domain], let i = bucket.firstIndex(where: { $0.sameIdentity(as: cookie) }) else {
            return false
        }
        bucket.remove(at: i)
        s.byDomain[cookie.domain] = bucket.isEmpty ? nil : bucket
        s.count -= 1
        return true
    }

    // MARK: sending

    /// The `Cookie` field value for a request to `url` (nil: no cookie
    /// matches), in RFC 6265 §5.4's order; marks those cookies used.
    public func cookieHeader(for url: URL) -> String? {
        let chosen = select(Origin(url), touch: true)
        return chosen.isEmpty ? nil : chosen.map(\.pair).joined(separator: "; ")
    }

    /// The cookies a request to `url` would carry, in the `Cookie` field's
    /// order (without marking them used).
    public func cookies(for url: URL) -> [PocketCookie] {
        select(Origin(url), touch: false)
    }

    /// Every cookie that has not expired, oldest first.
    public var allCookies: [PocketCookie] {
        let now = clock()
        return state.withLock { s in
            s.byDomain.values.flatMap { $0 }.filter { !$0.isExpired(at: now) }.sorted(by: Self.creationOrder)
        }
    }

    /// Cookies held (expired ones not yet removed included).
    public var count: Int { state.withLock { $0.count } }

    private func select(_ origin: Origin, touch: Bool) -> [PocketCookie] {
        let now = clock()
        let secure = isSecure(origin)
        return state.withLock { s in
            guard s.count > 0 else { return [] }
            var chosen: [PocketCookie] = []
            var key = Substring(origin.host)
            var own = true
            while true {
                if var bucket = s.byDomain[String(key)] {
                    var changed = false
                    var i = 0
                    while i < bucket.count {
                        let c = bucket[i]
                        if c.isExpired(at: now) {
                            bucket.remove(at: i)
                            s.count -= 1
                            changed = true
                            continue
                        }
                        if (own || !c.hostOnly) && (!c.secure || secure) && Self.pathMatches(origin.path, c.path) {
                            if touch {
                                bucket[i].lastAccessed = now
                                changed = true
                            }
                            chosen.append(bucket[i])
                        }
                        i += 1
                    }
                    if changed { s.byDomain[String(key)] = bucket.isEmpty ? nil : bucket }
                }
                // The parent domains hold Domain cookies that match too (never for an IP address).
                guard !origin.isIP, let dot = key.firstIndex(of: ".") else { break }
                key = key[key.index(after: dot)...]
                own = false
                if key.isEmpty { break }
            }
            // §5.4: longer paths first, then earlier creation first. A cookie
            // file's cookies (created in one instant) follow curl's tie-break
            // among themselves: the longer domain, then the longer name, then
            // the store's sequence (the file's later line first).
            return chosen.sorted { a, b in
                let la = a.path.utf8.count, lb = b.path.utf8.count
                if la != lb { return la > lb }
                if a.fromFile && b.fromFile && a.created == b.created {
                    let da = a.domain.utf8.count, db = b.domain.utf8.count
                    if da != db { return da > db }
                    let na = a.name.utf8.count, nb = b.name.utf8.count
                    if na != nb { return na > nb }
                }
                return Self.creationOrder(a, b)
            }
        }
    }

    private static func creationOrder(_ a: PocketCookie, _ b: PocketCookie) -> Bool {
        a.created != b.created ? a.created < b.created : a.sequence < b.sequence
    }

    // MARK: removing

    /// Removes the cookie with this name, domain and path; false when there is none.
    @discardableResult
    public func remove(name: String, domain: String, path: String) -> Bool {
        let probe = PocketCookie(name: name, value: "", domain: domain, path: path)
        return state.withLock { remove(matching: probe, in: &$0) }
    }

    /// Removes every cookie.
    public func removeAll() {
        state.withLock { s in
            s.byDomain = [:]
            s.count = 0
        }
    }

    /// Removes the session cookies (no expiry): what ending a browser session does.
    public func removeSessionCookies() {
        removeWhere { $0.isSession }
    }

    /// Removes the cookies that have expired (they are never sent; this frees them).
    public func removeExpired() {
        let now = clock()
        removeWhere { $0.isExpired(at: now) }
    }

    private func removeWhere(_ predicate: (PocketCookie) -> Bool) {
        state.withLock { s in
            for key in Array(s.byDomain.keys) {
                var bucket = s.byDomain[key]!
                let before = bucket.count
                bucket.removeAll(where: predicate)
                s.count -= before - bucket.count
                s.byDomain[key] = bucket.isEmpty ? nil : bucket
            }
        }
    }

    // MARK: the request path

    /// `request` with the store's cookies for its URL in its `Cookie`
    /// field, merged with a field the request has (see the type's notes).
    func attach(to request: PocketRequest) -> PocketRequest {
        let chosen = select(Origin(request.url), touch: true)
        guard !chosen.isEmpty else { return request }
        var request = request
        let own = request.headers.values(for: "Cookie")
        var pairs = chosen
        if !own.isEmpty {
            let names = Set(own.flatMap { $0.split(separator: ";") }.map { part in
                Self.trimmed(part.prefix { $0 != "=" })
            })
            pairs.removeAll { names.contains($0.name) }
            request.headers.remove("Cookie")
        }
        let value = (pairs.map(\.pair) + own).joined(separator: "; ")
        if !value.isEmpty { request.headers.add(name: "Cookie", value: value) }
        return request
    }

    /// Without leading and trailing spaces and tabs.
    static func trimmed(_ s: Substring) -> String {
        String(s.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    // MARK: matching (RFC 6265 §5.1)

    /// Host, path and scheme of a request URL, as the algorithms need them.
    struct Origin {
        var host: String
        var isIP: Bool
        var https: Bool
        /// The uri-path (percent-encoded, without the query); "/" when empty.
        var path: String

        init(_ url: URL) {
            let target = Target(url)
            host = target.host.lowercased()
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            https = target.https
            let p = url.path(percentEncoded: true)
            path = p.isEmpty ? "/" : p
            isIP = Self.isIPAddress(host)
        }

        static func isIPAddress(_ host: String) -> Bool {
            if host.contains(":") { return true }
            var addr = in_addr()
            return inet_pton(AF_INET, host, &addr) == 1
        }

        /// localhost, *.localhost, 127.0.0.0/8 or ::1.
        var isLoopback: Bool {
            host == "localhost" || host.hasSuffix(".localhost") || host == "::1"
                || (isIP && host.hasPrefix("127."))
        }
    }

    private func isSecure(_ origin: Origin) -> Bool {
        origin.https || (treatsLoopbackAsSecure && origin.isLoopback)
    }

    // Domains and paths are compared as bytes, as RFC 6265 compares them:
    // String's `==` and `hasPrefix` compare by canonical equivalence and by
    // Character, so "/e\u{301}" would be a prefix of "/\u{E9}x" and a dot
    // followed by a combining mark no dot at all.

    /// §5.1.3: identical, or `host` ends with "." + `domain` and is not an IP address.
    static func domainMatches(_ host: String, _ domain: String, hostIsIP: Bool) -> Bool {
        let h = host.utf8, d = domain.utf8
        if h.elementsEqual(d) { return true }
        guard !hostIsIP, h.count > d.count, h.suffix(d.count).elementsEqual(d) else { return false }
        return h[h.index(h.endIndex, offsetBy: -d.count - 1)] == UInt8(ascii: ".")
    }

    /// §5.1.4: identical; or `cookiePath` is a prefix of `requestPath` and
    /// ends with "/" or is followed by "/" in it.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        let r = requestPath.utf8, c = cookiePath.utf8
        guard r.starts(with: c) else { return false }
        if r.count == c.count || c.last == UInt8(ascii: "/") { return true }
        return r[r.index(r.startIndex, offsetBy: c.count)] == UInt8(ascii: "/")
    }

    /// §5.1.4's default-path: the uri-path up to its last "/" ("/" when
    /// that is the first character, or the path does not start with "/").
    static func defaultPath(_ uriPath: String) -> String {
        let u = uriPath.utf8
        guard u.first == UInt8(ascii: "/"), let last = u.lastIndex(of: UInt8(ascii: "/")), last != u.startIndex else { return "/" }
        return String(decoding: u[..<last], as: UTF8.self)
    }

    // MARK: Netscape cookie files

    /// The store in the Netscape cookie-file format curl's `-c` writes and
    /// `-b` reads (and wget's `--load-cookies`): one cookie a line, newest
    /// first as curl writes them, tab-separated: domain (a leading dot for
    /// a `Domain` cookie), `TRUE` when subdomains match too, path, `TRUE`
    /// when `Secure`, expiry in Unix seconds (0: a session cookie), name,
    /// value; `#HttpOnly_` before the domain of an `HttpOnly` cookie.
    /// Expired cookies are left out; `SameSite` has no column and is lost.
    public func netscapeFile() -> String {
        var text = "# Netscape HTTP Cookie File\n# https://curl.se/docs/http-cookies.html\n"
            + "# Written by Pocket. Edit at your own risk.\n\n"
        for c in allCookies.reversed() {
            let expiry = c.expires.map { date -> Int64 in
                let t = date.timeIntervalSince1970.rounded(.down)
                return t >= 9.2e18 ? Int64.max : max(1, Int64(t))
            } ?? 0
            text += (c.httpOnly ? "#HttpOnly_" : "") + (c.hostOnly ? "" : ".") + c.domain + "\t"
                + (c.hostOnly ? "FALSE" : "TRUE") + "\t" + c.path + "\t" + (c.secure ? "TRUE" : "FALSE") + "\t"
                + String(expiry) + "\t" + c.name + "\t" + c.value + "\n"
        }
        return text
    }

    /// Reads a Netscape cookie file (curl's `-c`, wget's, a browser
    /// export's). Lines are taken as curl takes them: `#` starts a comment
    /// (but `#HttpOnly_` a cookie); 7 tab-separated fields, or 6 for an
    /// empty value; expiry 0 is a session cookie. A line that is none of
    /// these is counted in `malformed` and skipped, never an error. Earlier
    /// lines are newer (curl writes newest first), which orders the
    /// `Cookie` field among cookies of equal paths.
    ///
    /// A `Set-Cookie: …` line (a saved response head, which curl's `-b` also
    /// reads) is stored as if received from `setCookieOrigin`, and skipped
    /// as malformed without one. With `dropSessionCookies` (curl's `-j`),
    /// session cookies are left out. Origin rules (public suffixes, Secure)
    /// do not apply to the file's own lines: it is the user's file.
    @discardableResult
    public func importNetscape(_ text: String, dropSessionCookies: Bool = false,
                               setCookieOrigin: URL? = nil) -> ImportSummary {
        let now = clock()
        var summary = ImportSummary()
        var parsed: [(line: Int, cookie: PocketCookie)] = []
        var headerLines: [String] = []
        func malformed(_ line: Int) {
            summary.malformed += 1
            if summary.malformedLines.count < 100 { summary.malformedLines.append(line) }
        }
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let number = index + 1
            var line = rawLine
            if line.hasSuffix("\r") { line = line.dropLast() }
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            if line.prefix(11).lowercased() == "set-cookie:" {
                if setCookieOrigin != nil {
                    headerLines.append(Self.trimmed(line.dropFirst(11)))
                } else {
                    malformed(number)
                }
                continue
            }
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                httpOnly = true
                line = line.dropFirst(10)
            } else if line.hasPrefix("#") {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 7 || fields.count == 6, !fields[0].isEmpty, fields[2].utf8.first == UInt8(ascii: "/"),
                  let seconds = Int64(fields[4]), !fields[5].isEmpty else {
                // An HTTP status line of a saved head is not a cookie either.
                if !(setCookieOrigin != nil && line.hasPrefix("HTTP/")) { malformed(number) }
                continue
            }
            if seconds == 0 && dropSessionCookies {
                summary.sessionCookiesDropped += 1
                continue
            }
            let expires = seconds == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
            if let expires, expires <= now {
                summary.expired += 1
                continue
            }
            var cookie = PocketCookie(name: String(fields[5]), value: fields.count == 7 ? String(fields[6]) : "",
                                      domain: String(fields[0]), hostOnly: fields[1].uppercased() != "TRUE",
                                      path: String(fields[2]), secure: fields[3].uppercased() == "TRUE",
                                      httpOnly: httpOnly, expires: expires, created: now)
            cookie.fromFile = true
            parsed.append((number, cookie))
        }
        state.withLock { s in
            // Sequences that make earlier lines newer, above every cookie stored so far.
            let base = s.sequence + UInt64(parsed.count)
            s.sequence = base + 1
            for (i, entry) in parsed.enumerated() {
                if Self.check(entry.cookie) != nil {
                    malformed(entry.line)
                    continue
                }
                let c = entry.cookie
                let size = c.name.utf8.count + c.value.utf8.count
                if size > limits.maxCookieBytes {
                    summary.rejected += 1
                    continue
                }
                _ = insert(c, now: now, sequence: base - UInt64(i), in: &s)
                summary.imported += 1
            }
            if let setCookieOrigin {
                let origin = Origin(setCookieOrigin)
                for line in headerLines {
                    if case .stored = store(line, origin: origin, now: now, in: &s) {
                        summary.imported += 1
                    } else {
                        summary.rejected += 1
                    }
                }
            }
        }
        summary.malformedLines.sort()
        return summary
    }

    /// Reads the Netscape cookie file at `path` (see `importNetscape(_:)`).
    /// Throws `.fileReadFailed` when it cannot be read.
    @discardableResult
    public func importNetscape(contentsOfFile path: String, dropSessionCookies: Bool = false,
                               setCookieOrigin: URL? = nil) throws(PocketError) -> ImportSummary {
        let data: Data
        do {
            data = try Data(contentsOf: URL(filePath: path))
        } catch {
            throw PocketError(.fileReadFailed, "cannot read the cookie file \(path): \(error)")
        }
        return importNetscape(String(decoding: data, as: UTF8.self), dropSessionCookies: dropSessionCookies,
                              setCookieOrigin: setCookieOrigin)
    }

    /// Writes `netscapeFile()` to `path` (a new file beside it, then renamed
    /// over it). Throws `.fileWriteFailed` when it cannot be written.
    public func exportNetscape(toFile path: String) throws(PocketError) {
        let text = netscapeFile()
        let temporary = path + ".pocket-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PocketError(.fileWriteFailed, "cannot write the cookie file \(path): \(String(cString: strerror(errno)))", systemError: errno)
        }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = errno
                close(fd)
                unlink(temporary)
                throw PocketError(.fileWriteFailed, "cannot write the cookie file \(path): \(String(cString: strerror(e)))", systemError: e)
            }
            bytes = bytes.dropFirst(n)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            throw PocketError(.fileWriteFailed, "cannot write the cookie file \(path): \(String(cString: strerror(e)))", systemError: e)
        }
    }
}
