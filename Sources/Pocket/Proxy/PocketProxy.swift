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

/// An HTTP proxy: `http://` targets are sent to it in absolute form, and
/// `https://` targets go through a CONNECT tunnel, with TLS to the origin
/// inside it (SNI and certificate verification against the origin's name,
/// never the proxy's).
///
/// ```swift
/// config.proxy = try PocketProxy("http://user:secret@proxy.internal:3128")
/// request.proxy = .direct          // this request goes direct
/// ```
///
/// Credentials (from the URL or given) are sent as Basic
/// `Proxy-Authorization`. Only `http://` proxies are supported (a proxy
/// reached over TLS, or SOCKS, is `.invalidProxy`).
public struct PocketProxy: Sendable, Hashable {
    /// The proxy's host name or address (IPv6 without brackets).
    public var host: String
    /// Its port; 1080 when a URL names none (curl's default).
    public var port: UInt16
    /// Basic credentials, or nil.
    public var username: String?
    /// The password for `username`, or nil.
    public var password: String?
    /// True for `.direct`: no proxy.
    public var isDirect: Bool { host.isEmpty }

    /// No proxy: the request (or client) connects directly, whatever the
    /// client's proxy or the environment say.
    public static let direct = PocketProxy(uncheckedHost: "", port: 0)

    /// An HTTP proxy at `host`:`port`, with Basic credentials when `username` is given.
    /// Throws `.invalidProxy` for an empty host or port 0.
    public init(host: String, port: UInt16, username: String? = nil, password: String? = nil) throws(PocketError) {
        guard !host.isEmpty, port > 0 else {
            throw PocketError(.invalidProxy, "a proxy needs a host and a port (got '\(host)':\(port))")
        }
        self.init(uncheckedHost: host, port: port, username: username, password: password)
    }

    private init(uncheckedHost host: String, port: UInt16, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// Parses a proxy URL as curl does: `[http://][user:password@]host[:port]`
    /// (no scheme means http; port 1080 by default; user and password
    /// percent-decoded). Throws `.invalidProxy`.
    public init(_ url: String) throws(PocketError) {
        let text = url.contains("://") ? url : "http://" + url
        guard let parsed = URL(string: text), let scheme = parsed.scheme?.lowercased() else {
            throw PocketError(.invalidProxy, "not a proxy URL: '\(url)'")
        }
        guard scheme == "http" else {
            throw PocketError(.invalidProxy, "\(scheme):// proxies are not supported ('\(url)'): only http://")
        }
        guard let host = parsed.host(percentEncoded: false), !host.isEmpty else {
            throw PocketError(.invalidProxy, "proxy URL has no host: '\(url)'")
        }
        guard let port = UInt16(exactly: parsed.port ?? 1080), port > 0 else {
            throw PocketError(.invalidProxy, "proxy port out of range: '\(url)'")
        }
        self.init(uncheckedHost: host, port: port, username: parsed.user(percentEncoded: false),
                  password: parsed.password(percentEncoded: false))
    }

    /// `host:port` as errors name it.
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The Basic `Proxy-Authorization` value, or nil without credentials.
    var authorization: String? {
        guard let username else { return nil }
        return "Basic " + Data("\(username):\(password ?? "")".utf8).base64EncodedString()
    }
}

/// The proxy settings a client works with: its own, else the environment's
/// (read once, when the client is made), and the hosts reached directly.
/// nil (no `ProxyRules`) when no proxy applies to anything, so requests pay
/// nothing for it.
struct ProxyRules: Sendable {
    /// A proxy from configuration or the environment, or why it is unusable.
    enum Entry: Sendable {
        case proxy(PocketProxy)
        case invalid(PocketError)
    }
    var http: Entry?
    var https: Entry?
    var noProxy: NoProxyList

    /// The rules of `configuration` (its `proxy`, else `environment` as
    /// curl reads it when `proxyFromEnvironment`); nil when nothing applies.
    static func make(_ configuration: PocketClient.Configuration,
                     environment: [String: String] = ProcessInfo.processInfo.environment) -> ProxyRules? {
        var rules = ProxyRules(noProxy: NoProxyList(configuration.noProxy ?? []))
        if let proxy = configuration.proxy {
            guard !proxy.isDirect else { return nil }
            rules.http = .proxy(proxy)
            rules.https = .proxy(proxy)
        } else if configuration.proxyFromEnvironment {
            func entry(_ names: [String]) -> Entry? {
                for name in names {
                    guard let value = environment[name], !value.isEmpty else { continue }
                    do { return .proxy(try PocketProxy(value)) } catch {
                        return .invalid(PocketError(.invalidProxy, "\(name): \(error.message)"))
                    }
                }
                return nil
            }
            let all = entry(["all_proxy", "ALL_PROXY"])
            // http_proxy in lower case only: a CGI program gets the client's
            // `Proxy:` header as HTTP_PROXY (the httpoxy problem), as curl says.
            rules.http = entry(["http_proxy"]) ?? all
            rules.https = entry(["https_proxy", "HTTPS_PROXY"]) ?? all
        }
        // NO_PROXY applies to a configured proxy too, as curl's to -x.
        if configuration.noProxy == nil, configuration.proxyFromEnvironment {
            rules.noProxy = NoProxyList(environment["no_proxy"] ?? environment["NO_PROXY"] ?? "")
        }
        return rules.http == nil && rules.https == nil ? nil : rules
    }

    /// The proxy for `target` (nil: direct). `own` is the request's.
    static func proxy(for target: Target, own: PocketProxy?, rules: ProxyRules?) throws(PocketError) -> PocketProxy? {
        if let own { return own.isDirect ? nil : own }
        guard let rules, let entry = target.https ? rules.https : rules.http else { return nil }
        if rules.noProxy.matches(target.host) { return nil }
        switch entry {
        case .proxy(let proxy): return proxy
        case .invalid(let error): throw error
        }
    }
}

/// Hosts reached without the proxy, in `NO_PROXY`'s syntax as curl reads
/// it: comma-separated entries; `*` alone matches every host (`*` among
/// other entries matches none); a name
/// matches itself and its subdomains (`example.com` and `.example.com` both
/// match `api.example.com`); an IP address matches itself; a CIDR block
/// (`10.0.0.0/8`, `fd00::/8`) matches the addresses in it. Ports are not
/// compared.
struct NoProxyList: Sendable {
    var all = false
    var names: [String] = []
    var blocks: [(bytes: [UInt8], prefix: Int)] = []

    init(_ list: String) {
        self.init(list.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init))
    }

    init(_ entries: [String]) {
        let entries = entries.map { $0.filter { !$0.isWhitespace }.lowercased() }.filter { !$0.isEmpty }
        // `*` is the wildcard only as the whole list (curl's rule); among
        // other entries it names no host.
        if entries == ["*"] { all = true }
        for raw in entries {
            var entry = raw
            if entry == "*" { continue }
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                entry = String(entry[entry.index(after: entry.startIndex)..<close]) + entry[entry.index(after: close)...]
            }
            let parts = entry.split(separator: "/", maxSplits: 1)
            if let first = parts.first, let bytes = Self.address(String(first)) {
                let prefix = parts.count == 2 ? Int(parts[1]) ?? -1 : bytes.count * 8
                if prefix >= 0, prefix <= bytes.count * 8 { blocks.append((bytes, prefix)) }
                continue
            }
            while entry.hasPrefix(".") { entry.removeFirst() }
            while entry.hasSuffix(".") { entry.removeLast() }
            if !entry.isEmpty { names.append(entry) }
        }
    }

    var isEmpty: Bool { !all && names.isEmpty && blocks.isEmpty }

    /// True when `host` (a name or an address) is reached directly.
    func matches(_ host: String) -> Bool {
        if all { return true }
        if isEmpty { return false }
        if let bytes = Self.address(host) {
            return blocks.contains { block in
                block.bytes.count == bytes.count && Self.samePrefix(block.bytes, bytes, bits: block.prefix)
            }
        }
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        return names.contains { name == $0 || name.hasSuffix("." + $0) }
    }

    /// The 4 or 16 bytes of a numeric address, or nil.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func samePrefix(_ a: [UInt8], _ b: [UInt8], bits: Int) -> Bool {
        var left = bits, i = 0
        while left >= 8 {
            if a[i] != b[i] { return false }
            left -= 8
            i += 1
        }
        guard left > 0 else { return true }
        let mask = UInt8(0xff) << (8 - left)
        return a[i] & mask == b[i] & mask
    }
}
