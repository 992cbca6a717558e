import CPocketTestTLS
import Foundation

/// An in-process HTTP/1.1 server on a loopback port, for tests.
///
/// A thread per connection serves requests one after another (keep-alive);
/// each request goes to the handler routed for its exact path, whose `Reply`
/// is either a generated response or a raw script (bytes in pieces, delays,
/// stalls, close mid-body, TCP reset). Counters let tests assert connection
/// reuse and concurrency caps. For streaming: `Reply.generated` sends large
/// `BytePattern` bodies without holding them, `routeResource` serves a
/// resumable download with byte ranges, requests carry `bodySHA256`, and
/// `route(_:respondsBeforeBody:_:)` answers before an upload's body.
///
/// ```swift
/// let server = try TestServer()
/// defer { server.shutdown() }
/// server.route("/hello") { _ in .text("Hello") }
/// server.route("/reset") { _ in .reset }
/// // ... point a client at server.baseURL + "/hello" ...
/// XCTAssertEqual(server.acceptedConnections, 1)
/// ```
///
/// Every blocking wait inside is bounded, so `shutdown()` (also run by
/// `deinit`) finishes in about a second even with stalled connections.
public final class TestServer: Sendable {
    /// Answers one request. Runs on the connection's thread; may block (e.g.
    /// to coordinate with the test), which delays only that connection.
    /// A handler that captures its server keeps it alive until `shutdown()`
    /// (which drops all handlers).
    public typealias Handler = @Sendable (Request) -> Reply

    // The server itself holds only immutable state; everything mutable lives
    // in `core`, behind its lock.
    let core: ServerCore

    /// The address the server listens on, e.g. `"127.0.0.1"` or `"::1"`.
    public let host: String
    /// The bound port.
    public let port: Int

    /// TLS settings, or nil for plain HTTP.
    public let tls: TLSOptions?

    /// Binds `host` (an IPv4 or IPv6 literal) and `port` (0: a free port) and
    /// starts accepting. With `tls`, every connection speaks TLS (handshake
    /// on the connection's thread; raw replies go through TLS too).
    public convenience init(host: String = "127.0.0.1", port: Int = 0, tls: TLSOptions? = nil) throws {
        let (fd, boundPort) = try Sockets.listen(host: host, port: port)
        try self.init(listener: fd, host: host, port: boundPort, socketPath: nil, tls: tls)
    }

    /// Listens on a Unix domain socket at `unixSocketPath` (an existing file
    /// there is replaced; `shutdown()` leaves the file for the test's
    /// temporary directory to remove). `host` is `localhost`, `port` 0.
    public convenience init(unixSocketPath: String, tls: TLSOptions? = nil) throws {
        let fd = try Sockets.listen(unixPath: unixSocketPath)
        try self.init(listener: fd, host: "localhost", port: 0, socketPath: unixSocketPath, tls: tls)
    }

    /// The OpenSSL context of a TLS server (kept for its counters).
    private let tlsContext: TLSContext?

    /// The Unix domain socket it listens on, or nil for TCP.
    public let socketPath: String?

    /// `http+unix://<percent-encoded path>` (`https+unix` with TLS), or nil for TCP.
    public var unixBaseURL: String? {
        guard let socketPath else { return nil }
        let encoded = socketPath.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
        return "\(tls == nil ? "http" : "https")+unix://\(encoded)"
    }

    private init(listener fd: Int32, host: String, port boundPort: Int, socketPath: String?, tls: TLSOptions?) throws {
        let context: TLSContext?
        do {
            context = try tls.map { try TLSContext($0) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.host = host
        self.port = boundPort
        self.socketPath = socketPath
        self.tls = tls
        self.tlsContext = context
        if let context {
            self.core = ServerCore(listenerFD: fd) { fd, core in
                TLSTransport(fd: fd, context: context) { [weak core] outcome in
                    core?.locked {
                        switch outcome {
                        case let .completed(handshake): core?.tlsHandshakes.append(handshake)
                        case let .failed(message): core?.failedTLSHandshakes.append(message)
                        }
                    }
                }
            }
        } else {
            self.core = ServerCore(listenerFD: fd)
        }
        do {
            try core.start()
        } catch {
            core.shutdown()
            throw error
        }
    }

    deinit {
        core.shutdown()
    }

    /// `http://HOST:PORT` (`https://` with TLS; IPv6 hosts in brackets),
    /// without a trailing slash.
    public var baseURL: String {
        let scheme = tls == nil ? "http" : "https"
        return host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }

    /// The URL of `path` with another host name for the same port, e.g.
    /// `url(host: "localhost", path: "/x")` → `https://localhost:PORT/x`
    /// (the name the test certificates are issued for).
    public func url(host: String, path: String) -> String {
        let scheme = tls == nil ? "http" : "https"
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(name):\(port)\(path)"
    }

    /// `baseURL` + `path` (pass a path starting with `/`).
    public func url(_ path: String) -> String {
        baseURL + path
    }

    // MARK: Routing

    /// Routes requests whose path (target without query) equals `path`.
    /// Replaces an earlier handler for the same path.
    public func route(_ path: String, _ handler: @escaping Handler) {
        core.locked { core.routes[path] = Route(handler: handler) }
    }

    /// Answers requests no route matches; nil (the default) answers 404.
    public var defaultHandler: Handler? {
        get { core.locked { core.defaultHandler } }
        set { core.locked { core.defaultHandler = newValue } }
    }

    // MARK: Behaviour

    /// Close each connection after this many requests (the last response
    /// announces `Connection: close`, as nginx's `keepalive_requests` does;
    /// raw replies are not altered). nil (the default): no limit.
    public var maxRequestsPerConnection: Int? {
        get { core.locked { core.maxRequestsPerConnection } }
        set { core.locked { core.maxRequestsPerConnection = newValue } }
    }

    /// Send `100 Continue` to a request with `Expect: 100-continue` before
    /// reading its body (true by default). Set false to test a client's
    /// fallback when the interim response never comes.
    public var sendsContinue: Bool {
        get { core.locked { core.sendsContinue } }
        set { core.locked { core.sendsContinue = newValue } }
    }

    /// Keep each request's body in `Request.body` (true by default). Set
    /// false for large uploads: bodies are then hashed and counted as they
    /// are read (`bodySHA256`, `bodyLength`) but not stored, so server memory
    /// stays O(64 KiB) per connection.
    public var keepsRequestBodies: Bool {
        get { core.locked { core.keepsRequestBodies } }
        set { core.locked { core.keepsRequestBodies = newValue } }
    }

    // MARK: Statistics

    /// Connections accepted since start (or the last `resetStatistics()`).
    public var acceptedConnections: Int { core.locked { core.acceptedConnections } }
    /// Complete requests received (head and body).
    public var requestCount: Int { core.locked { core.requestCount } }
    /// Connections open right now.
    public var openConnections: Int { core.locked { core.openConnections } }
    /// The most connections open at the same time.
    public var maxConcurrentConnections: Int { core.locked { core.maxConcurrentConnections } }
    /// Every complete request received, in order.
    public var receivedRequests: [Request] { core.locked { core.receivedRequests } }
    /// The exact bytes of the last request head read, even one that failed to
    /// parse (request line through the empty line).
    public var lastRequestHead: [UInt8] { core.locked { core.lastRequestHead } }

    /// TLS handshakes completed (TLS servers only).
    public var tlsHandshakes: Int { core.locked { core.tlsHandshakes.count } }
    /// Each completed TLS handshake, in order (version, ALPN, resumption).
    public var tlsHandshakeDetails: [TLSHandshake] { core.locked { core.tlsHandshakes } }
    /// Completed TLS handshakes that resumed a session (`SSL_session_reused`).
    public var resumedHandshakes: Int { core.locked { core.tlsHandshakes.filter(\.resumed).count } }
    /// ClientHellos that arrived on connections whose first handshake had
    /// completed: renegotiations a client agreed to (after
    /// `RawStep.requestTLSRenegotiation`, or of its own accord).
    public var tlsRenegotiations: Int { tlsContext.map { Int(pktt_ctx_renegotiations($0.pointer)) } ?? 0 }
    /// The error of each TLS handshake that failed, in order (e.g. the
    /// client rejected the certificate, or sent none to an mTLS server).
    public var failedTLSHandshakes: [String] { core.locked { core.failedTLSHandshakes } }

    /// Zeroes `acceptedConnections` and `requestCount`, forgets received
    /// requests and TLS handshakes, and restarts `maxConcurrentConnections` from the number open
    /// now. (Connection indices keep counting.)
    public func resetStatistics() {
        core.locked {
            core.acceptedConnections = 0
            core.requestCount = 0
            core.receivedRequests = []
            core.lastRequestHead = []
            core.tlsHandshakes = []
            core.failedTLSHandshakes = []
            core.maxConcurrentConnections = core.openConnections
        }
    }

    /// Polls `condition` every 5 ms until it holds or `timeout` seconds pass;
    /// returns whether it held. For server-side effects that trail the
    /// client, e.g. `server.waitUntil { $0.openConnections == 0 }`.
    @discardableResult
    public func waitUntil(timeout: Double = 2, _ condition: (TestServer) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition(self) {
            if Date() >= deadline { return false }
            Sockets.sleep(milliseconds: 5)
        }
        return true
    }

    // MARK: Closing

    /// Closes (FIN) every connection that is waiting for its next request
    /// with nothing pending, like a server's keep-alive timeout firing, and
    /// waits until they are closed. Returns how many were closed.
    @discardableResult
    public func closeIdleConnections() -> Int {
        core.closeIdleConnections()
    }

    /// Stops accepting, closes every connection and joins all threads.
    /// Idempotent; also run by `deinit`.
    public func shutdown() {
        core.shutdown()
    }
}
