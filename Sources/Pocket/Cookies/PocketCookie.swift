#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One cookie as a `PocketCookieStore` keeps it: RFC 6265 §5.3's fields.
///
/// Cookies come from `Set-Cookie` fields (`PocketCookieStore.store`), from a
/// Netscape cookie file (`PocketCookieStore.importNetscape`), or are made
/// here and added with `PocketCookieStore.add`.
public struct PocketCookie: Sendable, Hashable, Codable {
    /// The `SameSite` attribute (RFC 6265bis). Parsed and kept, not enforced:
    /// SameSite guards a browser's cross-site requests, and a client that is
    /// not a browser has no "site" that starts a request.
    public enum SameSite: String, Sendable, Hashable, Codable {
        /// `SameSite=Strict`: a browser sends it only with requests its own site starts.
        case strict = "Strict"
        /// `SameSite=Lax`: also with top-level navigations from other sites.
        case lax = "Lax"
        /// `SameSite=None`: with every request (browsers require `Secure` with it).
        case unrestricted = "None"
    }

    /// The cookie's name (case-sensitive).
    public var name: String
    /// Its value, as the server sent it (quotes included, if any).
    public var value: String
    /// The host it was set by (`hostOnly`) or its `Domain` attribute, in
    /// lower case without a leading dot.
    public var domain: String
    /// Sent to `domain` only (no `Domain` attribute), not to its subdomains.
    public var hostOnly: Bool
    /// Sent for request paths under this one (RFC 6265 §5.1.4).
    public var path: String
    /// Sent over https only.
    public var secure: Bool
    /// `HttpOnly`: kept and exported; Pocket is an HTTP API, so it is sent.
    public var httpOnly: Bool
    /// `SameSite`, when the server sent a known value.
    public var sameSite: SameSite?
    /// When it expires; nil for a session cookie (gone with the store, and
    /// with `removeSessionCookies()`).
    public var expires: Date?
    /// When it was first stored (a replacing cookie keeps the creation time
    /// of the one it replaces); with `sequence` it orders the `Cookie` field.
    public var created: Date
    /// When it was last sent or stored: the oldest goes first when a limit evicts.
    public var lastAccessed: Date
    /// Creation order within the store, for cookies created in the same instant.
    var sequence: UInt64 = 0
    /// Read from a cookie file: such cookies, created in one instant, are
    /// ordered among themselves as curl orders a file's cookies.
    var fromFile = false

    /// A cookie for `domain` (lower-cased, a leading dot dropped); a path
    /// that does not start with "/" becomes "/". `lastAccessed` is `created`.
    /// Both are read as bytes: a dot or a slash followed by a combining mark
    /// is one `Character`, but still the dot or the slash.
    public init(name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/",
                secure: Bool = false, httpOnly: Bool = false, sameSite: SameSite? = nil, expires: Date? = nil,
                created: Date = Date()) {
        self.name = name
        self.value = value
        let d = domain.lowercased()
        self.domain = d.utf8.first == UInt8(ascii: ".") ? String(decoding: d.utf8.dropFirst(), as: UTF8.self) : d
        self.hostOnly = hostOnly
        self.path = path.utf8.first == UInt8(ascii: "/") ? path : "/"
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.expires = expires
        self.created = created
        self.lastAccessed = created
    }

    /// No expiry: a session cookie.
    public var isSession: Bool { expires == nil }

    /// Whether it has expired at `now`.
    public func isExpired(at now: Date) -> Bool {
        guard let expires else { return false }
        return expires <= now
    }

    /// `name=value`, as the `Cookie` field carries it.
    public var pair: String { name + "=" + value }

    /// Cookies are the same cookie when name, domain, host-only flag and path
    /// are (RFC 6265bis §5.7): a host-only `a` and a `Domain` `a` for the
    /// same host are two cookies.
    func sameIdentity(as other: PocketCookie) -> Bool {
        name == other.name && domain == other.domain && hostOnly == other.hostOnly && path == other.path
    }

    /// Every field compared, the times included (two cookies of the same
    /// identity with other values are not equal).
    public static func == (a: PocketCookie, b: PocketCookie) -> Bool {
        a.name == b.name && a.value == b.value && a.domain == b.domain && a.hostOnly == b.hostOnly
            && a.path == b.path && a.secure == b.secure && a.httpOnly == b.httpOnly && a.sameSite == b.sameSite
            && a.expires == b.expires && a.created == b.created && a.lastAccessed == b.lastAccessed
    }

    /// Hashes the identity (name, domain and path), which equal cookies share.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(domain)
        hasher.combine(path)
    }

    private enum CodingKeys: String, CodingKey {
        case name, value, domain, hostOnly, path, secure, httpOnly, sameSite, expires, created, lastAccessed
    }
}

extension PocketCookie: CustomStringConvertible {
    /// `name=value; Domain=…; Path=…` and the flags (a `Set-Cookie`-like line).
    public var description: String {
        var s = pair + (hostOnly ? "; host-only \(domain)" : "; Domain=\(domain)") + "; Path=\(path)"
        if let expires { s += "; expires \(Int64(expires.timeIntervalSince1970.rounded(.down)))" }
        if secure { s += "; Secure" }
        if httpOnly { s += "; HttpOnly" }
        if let sameSite { s += "; SameSite=\(sameSite.rawValue)" }
        return s
    }
}
