#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One request as it will go on the wire, worked out from the request value
/// and the client's configuration: a pure value step (no I/O, no socket, no
/// file opened), run for every hop right before the engine. It merges the
/// client's default header fields under the request's own, adds URL
/// credentials as Basic `Authorization`, a multipart form's `Content-Type`
/// and `Accept-Encoding` when decompression is on, resolves the timeouts,
/// and states the one idempotency rule the engine's resend follows.
///
/// Building it costs no allocation: the header fields are a merged view
/// over the sources (`fields`), not a new list.
struct PreparedRequest {
    /// The request as given: its method, target, body, TLS settings and
    /// `Expect` wait are read from it where they are needed, not copied
    /// here (this value is built per hop; a copy of each would cost a
    /// reference count per string and some 500 bytes moved).
    let request: PocketRequest
    /// The replica a replica set's hop goes to (its scheme, host and port
    /// replace the target's: `https`, `host`, `port`), or nil.
    let replica: PocketReplicaEndpoint?
    /// The header fields, in the order they are written.
    let fields: HeaderSources
    /// The resolved timeouts (the request's own, else the client's; the
    /// total cut to `totalCap`) in the engine's milliseconds.
    let engineTimeouts: EngineTimeouts
    /// The Unix domain socket to connect to instead of host and port: the
    /// URL's (`http+unix`), else the request's, else the client's.
    let unixSocketPath: String?
    /// The proxy it goes through, or nil (direct).
    let proxy: ProxyRoute?
    /// Numeric addresses to connect to instead of resolving the host
    /// ("a,b"; the replica's in a DNS-found set, else
    /// `Configuration.addressOverrides`), or nil.
    let addresses: String?
    /// May the engine send it again on a new connection when a reused one
    /// failed before any response byte (`PocketRequest.isIdempotent`)? A
    /// one-shot body is then refused by the engine (`.bodyNotReplayable`).
    let idempotent: Bool

    /// The method's token, e.g. `GET`.
    var method: String { request.method.rawValue }
    /// The request's scheme, host, port and origin-form target (the
    /// replica's scheme, host and port are `https`, `host` and `port`).
    var target: Target { _read { yield request.target } }
    /// Whether the hop goes over TLS: the replica's scheme, else the target's.
    var https: Bool { replica.map { $0.scheme == "https" } ?? request.target.https }
    /// The host the hop connects to and names: the replica's, else the target's.
    var host: String { replica?.host ?? request.target.host }
    /// The port the hop connects to: the replica's, else the target's.
    var port: UInt16 { replica?.port ?? request.target.port }
    /// The body as the engine needs it described (files and streams are
    /// opened by the engine bridge).
    var body: PocketRequestBody.Source? { request.body?.source }
    /// `Expect: 100-continue` wait, if any.
    var expectContinue: Duration? { request.expectContinue }
    /// The request's own TLS settings (nil: the client's).
    var tls: PocketTLSConfiguration? { request.tls }

    /// Prepares `request` under `configuration`; throws `.invalidURL` or
    /// `.unsupportedScheme` for a URL the engine cannot send to.
    init(_ request: PocketRequest, configuration: PocketClient.Configuration) throws(PocketError) {
        try self.init(request, defaultHeaders: configuration.defaultHeaders, decompression: configuration.decompression,
                      timeouts: configuration.timeouts, unixSocketPath: configuration.unixSocketPath,
                      addressOverrides: configuration.addressOverrides, proxies: ProxyRules.make(configuration))
    }

    /// Prepares `request` under the client's settings that take part (read
    /// one by one, so the client's configuration is not copied per request).
    init(_ request: PocketRequest, defaultHeaders: PocketHeaders, decompression: Bool,
         timeouts clientTimeouts: PocketTimeouts, engineTimeouts clientMillis: EngineTimeouts? = nil,
         unixSocketPath clientSocket: String? = nil,
         addressOverrides: [PocketAddressOverride] = [], proxies: ProxyRules? = nil,
         replica: PocketReplicaEndpoint? = nil, totalCap: UInt32 = 0) throws(PocketError) {
        // Every stored property is assigned once, at the end, after the
        // last call that can throw: with a property assigned before a
        // throwing call the compiler built the value in a temporary and
        // copied it out (a retain and a release of each of its references
        // per request). The target is read in place (`request.target` is
        // borrowed), not copied.
        if let problem = request.target.problem {
            let scheme = request.url.scheme?.lowercased()
            let known: Set<String?> = [nil, "http", "https", "http+unix", "https+unix"]
            throw PocketError(known.contains(scheme) ? .invalidURL : .unsupportedScheme, problem)
        }
        var extra = PocketHeaders()
        if let userInfo = request.target.userInfo, !request.headers.contains("Authorization") {
            let token = Data("\(userInfo.user):\(userInfo.password)".utf8).base64EncodedString()
            extra.add(name: "Authorization", value: "Basic \(token)")
        }
        // Proxies: the request's, else the client's (its own or the
        // environment's), unless the host is in the no-proxy list; decided
        // again for each redirect hop.
        let unix = request.target.unixPath ?? request.unixSocketPath ?? clientSocket
        var route: ProxyRoute?
        if unix == nil, request.proxy != nil || proxies != nil,
           case let target = replica.map({ request.target.moved(to: $0) }) ?? request.target,
           let chosen = try ProxyRules.proxy(for: target, own: request.proxy, rules: proxies) {
            let chosenRoute = ProxyRoute(chosen, target: target, answer: request.proxyAnswer)
            if !chosenRoute.tunnel, let auth = chosenRoute.authorization, !request.headers.contains("Proxy-Authorization") {
                extra.add(name: "Proxy-Authorization", value: auth)
            }
            route = chosenRoute
        }
        if let form = request.body?.multipartForm, !request.headers.contains("Content-Type") {
            extra.add(name: "Content-Type", value: form.contentType)
        }
        let acceptEncoding = decompression && !request.headers.contains("Accept-Encoding")
            && !defaultHeaders.contains("Accept-Encoding")
        self.request = request
        fields = HeaderSources(defaults: defaultHeaders, extra: extra, own: request.headers, acceptEncoding: acceptEncoding)
        var timeouts: EngineTimeouts
        if let own = request.timeouts {
            timeouts = EngineTimeouts(own)
        } else {
            timeouts = clientMillis ?? EngineTimeouts(clientTimeouts)
        }
        // What is left of a task deadline (whole milliseconds, 0 for none).
        if totalCap > 0, timeouts.total == 0 || totalCap < timeouts.total { timeouts.total = totalCap }
        engineTimeouts = timeouts
        unixSocketPath = unix
        proxy = route
        // A replica's own address (a set found in DNS), else an override.
        addresses = route != nil ? nil : replica?.address ?? request.replicaAddress ?? (addressOverrides.isEmpty ? nil
            : PocketAddressOverride.list(host: replica?.host ?? request.target.host, port: replica?.port ?? request.target.port,
                                         in: addressOverrides))
        self.replica = replica
        idempotent = request.isIdempotent
    }
}

/// How a request goes through its proxy: forwarded in absolute form
/// (`http://`), or through a CONNECT tunnel (`https://`).
final class ProxyRoute {
    let proxy: PocketProxy
    let tunnel: Bool
    /// Basic credentials: CONNECT's (tunnel), or a header field (forwarding).
    let authorization: String?
    /// The absolute-form target of a forwarded request (RFC 9112 §3.2.2).
    let absoluteTarget: String?

    /// `answer`: the proxy step's answer to this proxy's challenge, which
    /// replaces the proxy's own Basic credentials (a different proxy's is ignored).
    init(_ proxy: PocketProxy, target: Target, answer: ProxyAnswer? = nil) {
        self.proxy = proxy
        tunnel = target.https
        if let answer, answer.host == proxy.host, answer.port == proxy.port {
            authorization = answer.value
        } else {
            authorization = proxy.authorization
        }
        if target.https {
            absoluteTarget = nil
        } else {
            let host = target.host.contains(":") ? "[\(target.host)]" : target.host
            absoluteTarget = "http://\(host)\(target.port == 80 ? "" : ":\(target.port)")\(target.pathAndQuery)"
        }
    }
}

/// A `Proxy-Authorization` value for one proxy: the answer to its 407
/// (or to a CONNECT refused with 401), computed by the proxy step.
struct ProxyAnswer: Sendable {
    var host: String
    var port: UInt16
    var value: String
}

/// The header fields of one request without building a merged array: the
/// client's defaults the request does not override, then URL credentials
/// and a form's type, then the request's own fields.
struct HeaderSources {
    let defaults: PocketHeaders
    let extra: PocketHeaders
    let own: PocketHeaders
    /// Adds `Accept-Encoding: gzip, deflate` (decompression on, none set).
    let acceptEncoding: Bool

    private static let acceptEncodingField = PocketHeaders.Field(name: "Accept-Encoding", value: "gzip, deflate")

    func forEach(_ body: (PocketHeaders.Field) -> Void) {
        if acceptEncoding { body(Self.acceptEncodingField) }
        // By index, with no closure: a closure here captured the three
        // lists (a retain and a release of each, per pass).
        // Most requests override no default: then nothing is looked up.
        let overrides = own.count > 0 || extra.count > 0
        for i in 0..<defaults.count {
            let f = defaults.field(at: i)
            if !overrides || (!own.contains(f.name) && !extra.contains(f.name)) { body(f) }
        }
        for i in 0..<extra.count { body(extra.field(at: i)) }
        for i in 0..<own.count { body(own.field(at: i)) }
    }

    /// The fields as a list (tests, debugging).
    var list: PocketHeaders {
        var all = PocketHeaders()
        forEach { all.add(name: $0.name, value: $0.value) }
        return all
    }
}
