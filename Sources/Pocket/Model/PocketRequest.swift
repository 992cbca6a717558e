#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An HTTP request as a value: build it, copy it, keep it, send it later.
///
/// ```swift
/// var request = PocketRequest(method: .post, url: URL(string: "http://127.0.0.1:8080/items")!)
/// request.headers["Content-Type"] = "application/json"
/// request.body = .bytes(Data(#"{"name":"pocket"}"#.utf8))
/// let response = try await client.send(request)
/// ```
public struct PocketRequest: Sendable, Hashable, Codable {
    /// The fields (but `headers`) live in one shared box, copied on the first
    /// change to a shared copy: a request is passed, kept in its response and
    /// handed to middleware for the price of two references, not of a dozen fields.
    final class Storage: @unchecked Sendable {
        // Invariant: mutated only through `PocketRequest`'s setters, after
        // `isKnownUniquelyReferenced` made this box the request's own.
        // One stored struct, not a property per field: a copy reads it with
        // one access. Not checked for exclusive access at run time (each
        // read of a class's stored `var` otherwise is: a dozen per request
        // on the path): the invariant above is what keeps accesses apart.
        @exclusivity(unchecked) var f: Fields

        struct Fields {
            var method: PocketMethod
            var url: URL
            var target: Target
            var body: PocketRequestBody?
            var expectContinue: Duration?
            var redirects: PocketRedirectPolicy?
            var timeouts: PocketTimeouts?
            var tls: PocketTLSConfiguration?
            var unixSocketPath: String?
            var proxy: PocketProxy?
            var format: PocketContentFormat?
            var validation: PocketValidation?
            var schema: PocketSchema?
            var errorParser: (any PocketErrorParser)?
            var metadata: (any Sendable)?
            var authentication: PocketAuthentication?
            var cachePolicy: PocketCachePolicy?
            var proxyAnswer: ProxyAnswer?
            var replicaAddress: String?
        }

        init(method: PocketMethod, url: URL, body: PocketRequestBody?) {
            f = Fields(method: method, url: url, target: Target(url), body: body)
        }

        private init(_ fields: Fields) { f = fields }

        /// A copy of every field (`target` is not worked out again).
        func copy() -> Storage { Storage(f) }
    }

    private var storage: Storage

    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// The method; `.get` by default.
    public var method: PocketMethod {
        get { storage.f.method }
        _modify {
            let s = unique()
            yield &s.f.method
        }
        set { unique().f.method = newValue }
    }
    /// An absolute `http` or `https` URL. Its path and query are sent as they
    /// are percent-encoded in the URL.
    public var url: URL {
        get { storage.f.url }
        set {
            let s = unique()
            s.f.url = newValue
            s.f.target = Target(newValue)
        }
    }
    /// Header fields sent after the client's defaults (a field here replaces a
    /// default of the same name). `Host` and `Content-Length` are written by the engine.
    // Kept beside the box, not in it: a middleware that adds a field (the
    // most common change) then copies no other field.
    public var headers: PocketHeaders
    /// The body, or nil for none: bytes, a file or a stream (`PocketRequestBody`).
    /// An empty body sends `Content-Length: 0`.
    public var body: PocketRequestBody? {
        get { storage.f.body }
        _modify {
            let s = unique()
            yield &s.f.body
        }
        set { unique().f.body = newValue }
    }
    /// Send `Expect: 100-continue` and wait up to this long for the server's
    /// `100 Continue` before sending the body; nil (the default) sends the
    /// body at once. Worth it for large uploads a server may refuse (auth,
    /// 413): the refusal arrives before the bytes are sent. Past the wait the
    /// body goes anyway, as RFC 9110 §10.1.1 advises for servers that never answer 100.
    public var expectContinue: Duration? {
        get { storage.f.expectContinue }
        _modify {
            let s = unique()
            yield &s.f.expectContinue
        }
        set { unique().f.expectContinue = newValue }
    }
    /// How this request follows redirects; nil (the default) uses the
    /// client's `Configuration.redirects`.
    public var redirects: PocketRedirectPolicy? {
        get { storage.f.redirects }
        _modify {
            let s = unique()
            yield &s.f.redirects
        }
        set { unique().f.redirects = newValue }
    }
    /// Timeouts for this request only; nil uses the client's `Configuration.timeouts`.
    public var timeouts: PocketTimeouts? {
        get { storage.f.timeouts }
        _modify {
            let s = unique()
            yield &s.f.timeouts
        }
        set { unique().f.timeouts = newValue }
    }
    /// TLS settings for this request only; nil uses the client's
    /// `Configuration.tls`. Connections are pooled per distinct setting, so a
    /// request never reuses a connection made under other settings.
    public var tls: PocketTLSConfiguration? {
        get { storage.f.tls }
        _modify {
            let s = unique()
            yield &s.f.tls
        }
        set { unique().f.tls = newValue }
    }
    /// A Unix domain socket to send this request through instead of
    /// connecting to the URL's host and port (curl's `--unix-socket`): the
    /// URL still gives the `Host` field and, for `https`, the name the
    /// certificate is verified against. nil (the default) uses the client's
    /// `Configuration.unixSocketPath`; an `http+unix`/`https+unix` URL's own
    /// path wins over both. Connections are pooled per socket path.
    public var unixSocketPath: String? {
        get { storage.f.unixSocketPath }
        _modify {
            let s = unique()
            yield &s.f.unixSocketPath
        }
        set { unique().f.unixSocketPath = newValue }
    }
    /// The proxy for this request (`.direct`: none), over the client's
    /// `Configuration.proxy` and the environment; nil (the default) leaves it
    /// to them. Not archived (it may carry credentials).
    public var proxy: PocketProxy? {
        get { storage.f.proxy }
        _modify {
            let s = unique()
            yield &s.f.proxy
        }
        set { unique().f.proxy = newValue }
    }
    /// The format the request was built with (`PocketRequest(path:…)`,
    /// `client.request`, templates), which also wrote its `Accept` and
    /// `Content-Type`. Here it tells validation and `PocketResponse.decode` what to
    /// expect; nil (a request made from a URL) means JSON to them. Setting it
    /// does not change the headers.
    public var format: PocketContentFormat? {
        get { storage.f.format }
        _modify {
            let s = unique()
            yield &s.f.format
        }
        set { unique().f.format = newValue }
    }
    /// Validation `client.send` applies to this request's response; nil (the
    /// default) uses the client's `Configuration.validation`, which is off by default.
    public var validation: PocketValidation? {
        get { storage.f.validation }
        _modify {
            let s = unique()
            yield &s.f.validation
        }
        set { unique().f.validation = newValue }
    }
    /// The schema `client.send` applies to the response before returning it
    /// (with the client's `Configuration.schemas`: its error parser, then
    /// validation, transformers, mappers); the result is
    /// `response.schemaResult`, which `response.decode` reads. nil (the
    /// default): no schema, no work. Not compared, hashed or archived.
    public var schema: PocketSchema? {
        get { storage.f.schema }
        _modify {
            let s = unique()
            yield &s.f.schema
        }
        set { unique().f.schema = newValue }
    }
    /// Whether `client.send` has a schema or an error parser to apply
    /// (read in place: no copy of either on the common path without them).
    var needsSchemaStep: Bool {
        if case .none = storage.f.schema, case .none = storage.f.errorParser { return false }
        return true
    }
    /// This request's error parser (TyphoonRestClient's per-request one):
    /// `client.send` asks it about the response (and throws `.errorResponse`
    /// with its typed error) before the schema applies, in place of
    /// `Configuration.schemas.errorParser`; with no `schema`, it runs alone.
    /// nil by default. Not compared, hashed or archived.
    public var errorParser: (any PocketErrorParser)? {
        get { storage.f.errorParser }
        _modify {
            let s = unique()
            yield &s.f.errorParser
        }
        set { unique().f.errorParser = newValue }
    }
    /// The caller's own value carried with the request (AFNetworking's
    /// `userInfo`, the fields of an STNetTask subclass): which business
    /// operation it belongs to, a trace id, a tenant. Pocket never reads it;
    /// middleware see it on the request they adapt, and it reaches
    /// `PocketTaskEvent.metadata` (events and observers),
    /// `PocketQueuedTask.metadata` and the response (`metadata` on
    /// `PocketResponse`, `PocketStreamingResponse` and
    /// `PocketDownloadResponse`). Read it back with a cast
    /// (`event.metadata as? Checkout`). nil by default. Not compared,
    /// hashed or archived (a `Sendable` value need not be `Codable`).
    public var metadata: (any Sendable)? {
        get { storage.f.metadata }
        set { unique().f.metadata = newValue }
    }
    /// How this request answers 401 challenges (Basic, Digest); nil (the
    /// default) uses the client's `PocketRequestHandling.authentication`,
    /// which is off by default. Not compared, hashed or archived.
    public var authentication: PocketAuthentication? {
        get { storage.f.authentication }
        set { unique().f.authentication = newValue }
    }
    /// How this request uses the client's response cache; nil (the
    /// default) is `.useProtocol`. Not compared, hashed or archived.
    public var cachePolicy: PocketCachePolicy? {
        get { storage.f.cachePolicy }
        set { unique().f.cachePolicy = newValue }
    }

    /// The `Proxy-Authorization` answering a proxy's challenge, for that
    /// proxy only (set by the proxy step for one hop; Sources/Pocket/Proxy).
    /// Not compared, hashed or archived.
    var proxyAnswer: ProxyAnswer? {
        get { storage.f.proxyAnswer }
        set { unique().f.proxyAnswer = newValue }
    }

    /// The numeric address of the replica this hop goes to (a replica set
    /// found in DNS: the URL keeps the name), or nil (Sources/Pocket/Replicas).
    /// Not compared, hashed or archived.
    var replicaAddress: String? {
        get { storage.f.replicaAddress }
        set { unique().f.replicaAddress = newValue }
    }

    /// Sends this request to another origin (a replica) with `url` kept:
    /// the target moved to it (what the engine writes and connects to),
    /// connected through its `address` when it has one. No URL is parsed.
    mutating func moveTarget(to replica: PocketReplicaEndpoint) {
        let s = unique()
        s.f.target = s.f.target.moved(to: replica)
        s.f.replicaAddress = replica.address
    }

    /// Whether sending this request twice has the effect of sending it once:
    /// its method is idempotent (RFC 9110 §9.2.2: GET, HEAD, OPTIONS, TRACE,
    /// PUT, DELETE) or it carries an `Idempotency-Key` header field. The one
    /// rule for every resend: the retry policy's and the engine's own, after
    /// a reused connection failed before any response byte.
    public var isIdempotent: Bool { method.isIdempotent || headers.contains("Idempotency-Key") }

    /// The parts of `url` the engine needs, computed once per URL so that
    /// sending the same request again does no URL parsing.
    var target: Target { _read { yield storage.f.target } } // borrowed: no copy of its strings

    /// The host and port a TCP request goes to, from the parts parsed once
    /// with its URL (the port is the scheme's when the URL has none); nil
    /// for a Unix socket or a URL that could not be parsed. For the
    /// package's tracing middleware: `URL.host` decodes the host anew on
    /// each read.
    package var server: (host: String, port: Int)? {
        let target = self.target
        guard target.problem == nil, target.unixPath == nil, !target.host.isEmpty else { return nil }
        return (target.host, Int(target.port))
    }

    /// The URL's path, percent-decoded (`url.path(percentEncoded: false)`):
    /// the endpoint key of events and middleware. Read from the target
    /// (no URL parsing) unless the path has escapes.
    var endpointPath: String {
        let pathAndQuery = target.pathAndQuery
        let bytes = pathAndQuery.utf8
        let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        guard target.problem == nil, !bytes[..<end].contains(UInt8(ascii: "%")) else { return url.path(percentEncoded: false) }
        return target.emptyPath ? "" : String(pathAndQuery[..<end])
    }

    /// A request for `url`: a GET with no fields and no body by default. The client's
    /// default headers (`Configuration.defaultHeaders`) are added when it is sent,
    /// unless `headers` has fields of the same name.
    public init(method: PocketMethod = .get, url: URL, headers: PocketHeaders = [:], body: PocketRequestBody? = nil) {
        storage = Storage(method: method, url: url, body: body)
        self.headers = headers
    }

    /// A request for a URL string; throws `PocketError.invalidURL` when it does not parse.
    public init(method: PocketMethod = .get, _ urlString: String, headers: PocketHeaders = [:], body: PocketRequestBody? = nil) throws {
        guard let url = URL(string: urlString) else {
            throw PocketError(.invalidURL, "not a URL: \(urlString)")
        }
        self.init(method: method, url: url, headers: headers, body: body)
    }

    private enum CodingKeys: String, CodingKey {
        case method, url, headers, body, timeouts, tls, expectContinue, format, validation, redirects, unixSocketPath
    }

    /// Decodes the form `encode(to:)` writes (a request saved to retry later).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(method: try c.decode(PocketMethod.self, forKey: .method),
                  url: try c.decode(URL.self, forKey: .url),
                  headers: try c.decodeIfPresent(PocketHeaders.self, forKey: .headers) ?? [:],
                  body: try c.decodeIfPresent(PocketRequestBody.self, forKey: .body))
        expectContinue = try c.decodeIfPresent(Duration.self, forKey: .expectContinue)
        redirects = try c.decodeIfPresent(PocketRedirectPolicy.self, forKey: .redirects)
        timeouts = try c.decodeIfPresent(PocketTimeouts.self, forKey: .timeouts)
        tls = try c.decodeIfPresent(PocketTLSConfiguration.self, forKey: .tls)
        format = try c.decodeIfPresent(PocketContentFormat.self, forKey: .format)
        validation = try c.decodeIfPresent(PocketValidation.self, forKey: .validation)
        unixSocketPath = try c.decodeIfPresent(String.self, forKey: .unixSocketPath)
    }

    /// Encodes what is sent and how: method, URL, fields, body, redirects, timeouts,
    /// TLS, `expectContinue`, format, validation and Unix socket path; `proxy`,
    /// `schema`, `errorParser`, `metadata`, `authentication` and `cachePolicy` are
    /// not kept. Throws `EncodingError` for a stream body.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(method, forKey: .method)
        try c.encode(url, forKey: .url)
        try c.encode(headers, forKey: .headers)
        try c.encodeIfPresent(body, forKey: .body)
        try c.encodeIfPresent(redirects, forKey: .redirects)
        try c.encodeIfPresent(timeouts, forKey: .timeouts)
        try c.encodeIfPresent(tls, forKey: .tls)
        try c.encodeIfPresent(expectContinue, forKey: .expectContinue)
        try c.encodeIfPresent(format, forKey: .format)
        try c.encodeIfPresent(validation, forKey: .validation)
        try c.encodeIfPresent(unixSocketPath, forKey: .unixSocketPath)
    }

    /// Equal when everything that is sent and how is equal (method, URL, fields, body,
    /// timeouts, TLS, redirects, format, validation, socket, proxy); metadata and
    /// schema are not compared.
    public static func == (lhs: PocketRequest, rhs: PocketRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.headers == rhs.headers
            && lhs.body == rhs.body && lhs.timeouts == rhs.timeouts && lhs.tls == rhs.tls
            && lhs.expectContinue == rhs.expectContinue && lhs.format == rhs.format
            && lhs.validation == rhs.validation && lhs.redirects == rhs.redirects
            && lhs.unixSocketPath == rhs.unixSocketPath && lhs.proxy == rhs.proxy
    }

    /// Hashes the method, URL, fields and body (a subset of what `==` compares).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(headers)
        hasher.combine(body)
    }
}

/// Scheme, host, port and origin-form target of a URL, or why it cannot be sent.
struct Target: Sendable, Hashable {
    var https = false
    var host = ""
    var port: UInt16 = 80
    var pathAndQuery = "/"
    /// The URL's path was empty (`pathAndQuery` then starts with the "/" sent).
    var emptyPath = false
    var userInfo: (user: String, password: String)?
    /// The socket of an `http+unix`/`https+unix` URL (its percent-decoded host).
    var unixPath: String?
    var problem: String?

    init(_ url: URL) {
        var unix = false
        switch url.scheme?.lowercased() {
        case "http": https = false
        case "https": https = true
        case "http+unix": unix = true
        case "https+unix": (https, unix) = (true, true)
        case let other:
            problem = "unsupported URL scheme \(other.map { "'\($0)'" } ?? "(none)"): only http, https, http+unix and https+unix"
            return
        }
        guard let h = url.host(percentEncoded: false), !h.isEmpty else {
            problem = unix ? "http+unix URL has no socket path (the percent-encoded path is its host, e.g. http+unix://%2Frun%2Fapp.sock/): \(url.absoluteString)"
                           : "URL has no host: \(url.absoluteString)"
            return
        }
        // A decoded %00, %0D or %0A would cut the name short for DNS and TLS
        // (C strings) or split the request head: never a host.
        guard !h.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            problem = "URL host has a control character: \(url.absoluteString)"
            return
        }
        if unix {
            // AsyncHTTPClient's convention: the host is the socket's path,
            // and the origin is localhost (Host field, TLS name).
            unixPath = h
            host = "localhost"
        } else {
            host = h
        }
        let p = url.port ?? (https ? 443 : 80)
        guard p > 0, p <= 65535 else {
            problem = "URL port out of range: \(p)"
            return
        }
        port = UInt16(p)
        var path = url.path(percentEncoded: true)
        if path.isEmpty {
            path = "/"
            emptyPath = true
        }
        if let q = url.query(percentEncoded: true) { path += "?" + q }
        pathAndQuery = path
        if let user = url.user(percentEncoded: false) {
            userInfo = (user, url.password(percentEncoded: false) ?? "")
        }
    }

    static func == (a: Target, b: Target) -> Bool {
        a.https == b.https && a.host == b.host && a.port == b.port && a.pathAndQuery == b.pathAndQuery
            && a.unixPath == b.unixPath
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(pathAndQuery)
    }
}

/// An HTTP request method: the standard ones as constants, any other token
/// (`"PURGE"`, `"PROPFIND"`) through the string initializer.
///
/// Methods are case-sensitive (RFC 9110 §9.1); the engine rejects a method
/// that is empty or not a token before anything is sent.
public struct PocketMethod: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method as sent, e.g. `"GET"`.
    public let rawValue: String
    /// The method `rawValue`, as written (the same as `init(_:)`).
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The method `rawValue`, as written (methods are case-sensitive).
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// A method literal: `let purge: PocketMethod = "PURGE"`.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// `GET`: safe and idempotent.
    public static let get = PocketMethod("GET")
    /// `HEAD`: a GET without the body (the response has none, whatever its
    /// `Content-Length`).
    public static let head = PocketMethod("HEAD")
    /// `POST`: not idempotent, so not sent again after a failure unless it carries an
    /// `Idempotency-Key` (or the retry policy's `nonIdempotent` allows it).
    public static let post = PocketMethod("POST")
    /// `PUT`: idempotent.
    public static let put = PocketMethod("PUT")
    /// `PATCH`: not idempotent.
    public static let patch = PocketMethod("PATCH")
    /// `DELETE`: idempotent.
    public static let delete = PocketMethod("DELETE")
    /// `OPTIONS`: safe and idempotent.
    public static let options = PocketMethod("OPTIONS")
    /// `TRACE`: safe and idempotent.
    public static let trace = PocketMethod("TRACE")
    /// `CONNECT` (RFC 9110 §9.3.6). Tunnels through a `PocketProxy` need no request
    /// of yours: the engine sends their CONNECT itself.
    public static let connect = PocketMethod("CONNECT")

    /// Idempotent methods (RFC 9110 §9.2.2) may be retried automatically when a
    /// reused connection turns out to be closed before any response byte.
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": return true
        default: return false
        }
    }

    /// The method as sent.
    public var description: String { rawValue }
}

/// TLS settings of a client. Verification is on by default against the
/// system trust store; every relaxation is explicit.
public struct PocketTLSConfiguration: Sendable, Hashable, Codable {
    /// A PEM file of trusted CA certificates, replacing the system store. Default nil.
    public var caFile: String?
    /// A hashed directory of CA certificates (`c_rehash`), replacing the system store. Default nil.
    public var caDirectory: String?
    /// The client certificate chain (PEM) for mutual TLS. Default nil.
    public var certificateChainFile: String?
    /// The client certificate's private key (PEM); nil: it is in `certificateChainFile`.
    public var privateKeyFile: String?
    /// SHA-256 pins of the server's public key, as curl writes them:
    /// `"sha256//<base64>"` (several allowed; one must match). Default none.
    public var pinnedPublicKeys: [String] = []
    /// The lowest protocol accepted: TLS 1.2 by default (TLS 1.0/1.1 are
    /// deprecated by RFC 8996).
    public var minimumVersion: Version = .tls12
    /// OpenSSL cipher list for TLS 1.2 (`"ECDHE+AESGCM"`); nil: OpenSSL's defaults.
    public var ciphers: String?
    /// Turns every certificate check off. For development against servers
    /// with throwaway certificates only: anyone on the path can read and
    /// change the traffic. Logs a warning once per process. Default false.
    public var insecureSkipVerification = false

    /// A TLS protocol version, for `minimumVersion`.
    public enum Version: Sendable, Hashable, Codable {
        /// TLS 1.2 (RFC 5246) or TLS 1.3 (RFC 8446).
        case tls12, tls13
    }

    /// The defaults: the system trust store, full verification, TLS 1.2 or later,
    /// OpenSSL's ciphers, no client certificate and no pins.
    public init() {}
}

extension Target {
    /// This target at `replica`: its scheme, host and port, the path and
    /// query kept.
    func moved(to replica: PocketReplicaEndpoint) -> Target {
        var target = self
        target.https = replica.scheme == "https"
        target.host = replica.host
        target.port = replica.port
        return target
    }
}
