#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An HTTP/1.1 client with a keep-alive connection pool, running on Pocket's
/// C engine (one epoll loop thread by default).
///
/// Create one per service and share it: it is `Sendable`, and its pool is
/// what makes the second request to an origin fast.
///
/// ```swift
/// let client = PocketClient()
/// let response = try await client.send(PocketRequest(url: URL(string: "http://127.0.0.1:8080/")!))
/// print(response.status, response.text)
/// try await client.shutdown()
/// ```
///
/// Dropping the last reference without `shutdown()` is safe: the engine stops,
/// its threads are joined, and nothing leaks once requests in flight finish.
public final class PocketClient: Sendable {
    /// How a client behaves. Every default is safe for a service talking to
    /// other services; each says why it is what it is.
    public struct Configuration: Sendable {
        /// Deadlines; connect 10 s, read 30 s, no total deadline by default.
        public var timeouts = PocketTimeouts()
        /// Connections per origin (scheme, host, port), 64 by default: enough
        /// to keep a loopback server busy, few enough not to exhaust its
        /// accept queue. Requests beyond it wait in FIFO order.
        public var maxConnectionsPerOrigin = 64
        /// An idle pooled connection is closed after this, 60 s by default
        /// (longer than most servers keep one, so the server usually closes
        /// first; the engine notices that close at once).
        public var idleConnectionTimeout: Duration = .seconds(60)
        /// Event-loop threads in the engine, 1 by default: one loop saturates a
        /// core on loopback; more help only with many origins and cores.
        public var engineThreads = 1
        /// How the engine's loops write to sockets: `.automatic` by default
        /// (io_uring where the kernel allows it, else epoll), unless the
        /// `POCKET_IO_BACKEND` environment variable (`auto`, `epoll`,
        /// `io_uring`) names another: a whole service or test suite can run on
        /// one backend without a code change. See `PocketIOBackend`; the one
        /// in use is `PocketClient.ioBackend`.
        /// Set per engine: scoped clients share their parent's.
        public var ioBackend: PocketIOBackend = .fromEnvironment
        /// How long a resolved host name is reused, 30 s by default.
        public var dnsCacheTTL: Duration = .seconds(30)
        /// Addresses to connect to instead of resolving a host and port
        /// (curl's `--resolve`); empty by default. See `PocketAddressOverride`.
        public var addressOverrides: [PocketAddressOverride] = []
        /// Replica sets: a request whose URL host is a set's name goes to one
        /// of its replicas, balanced, with failing replicas ejected (see
        /// `PocketReplicaSet`). Empty by default.
        public var replicaSets: [PocketReplicaSet] = []
        /// Outlier ejection for plain origins (hosts that name no replica
        /// set): an origin that keeps failing is treated as a set of one,
        /// and while it is ejected its requests fail at once with
        /// `.circuitOpen`. nil (the default): off.
        public var originEjection: PocketOutlierEjection?
        /// Happy eyeballs (RFC 8305): when a host has several addresses, a
        /// new connection attempt starts this long after the previous one
        /// if that has not connected yet (at once when it fails), IPv6 and
        /// IPv4 interleaved; the first to connect wins and the others are
        /// closed. 250 ms by default (RFC 8305's recommendation): long enough
        /// that a healthy first address wins alone, short enough that a dead
        /// one costs a quarter second, not a connect timeout. The connect
        /// timeout covers the whole race. `.zero` tries one address at a time.
        /// Set per engine: scoped clients share their parent's.
        public var connectionAttemptDelay: Duration = .milliseconds(250)
        /// How long the sending thread waits for a lone request's answer
        /// itself; `.zero` never. When a request goes out on a pooled
        /// connection while the client has nothing else in flight, the
        /// task's thread writes it (the engine's loop stays asleep); with a
        /// wait, that thread then waits up to this long for the response on
        /// the socket, parses it there and carries on with the task: one
        /// thread switch per request instead of two, which is most of a
        /// one-at-a-time caller's latency on a fast network (about +10–15%
        /// requests per second at one connection on loopback). An answer
        /// that takes longer is handed to the loop (no time is lost waiting
        /// for it), and the next 64 such requests do not wait. A task
        /// cancelled during the wait is cancelled when the wait ends.
        ///
        /// The wait is only for a caller in a tight one-at-a-time request
        /// loop: it happens only when no request of this client has had
        /// another in flight beside it for the last 10 ms, and the request
        /// is sent within 50 µs of the last answer. A server whose handlers
        /// call Pocket concurrently, or that answers its own client between
        /// two calls, therefore never has a thread held (a Hummingbird
        /// gateway that waited at every idle moment served 6.2k instead of
        /// 15.3k requests per second at 64 connections, and 3.8k instead of
        /// 4.6k at one). `send` starts on the caller's executor
        /// (`nonisolated(nonsending)`), so an actor sending in such a loop
        /// stays busy during the wait instead of taking other work. 200 µs
        /// by default; set `.zero` for a caller that must never wait on its
        /// own thread.
        /// Set per engine: scoped clients share their parent's.
        public var sendingThreadWait: Duration = .microseconds(200)
        /// Of the sending thread's wait (`sendingThreadWait`), how long it
        /// polls the socket without sleeping before it sleeps for the rest:
        /// busy-polling, as the kernel's `SO_BUSY_POLL` does for a socket
        /// read (whose documentation suggests 50 µs). An answer that comes
        /// within it costs the thread no sleep and no wake-up: no context
        /// switch and, on a virtual machine, no halted CPU to bring back.
        /// On loopback against nginx that is about 2.5× the requests per
        /// second at one connection and less CPU per request, since the
        /// thread no longer sleeps between requests (docs/BENCHMARKS.md).
        ///
        /// The spin costs CPU only when the answer is slower than the spin:
        /// a spin that ends with nothing makes the next 16 waits sleep at
        /// once (32, 64, … up to 1,024 after further misses in a row; an
        /// answer found spinning resets it), so against a slower server at
        /// most one wait in 17 spins. It happens only where the wait
        /// happens (a caller in a tight one-at-a-time loop) and never
        /// lengthens it. 50 µs by default (at most `sendingThreadWait`);
        /// `.zero` never spins.
        /// Set per engine: scoped clients share their parent's.
        public var sendingThreadSpin: Duration = .microseconds(50)
        /// How long no request may have had another in flight beside it
        /// before a sender waits (`sendingThreadWait`): 10 ms. Tests set it
        /// long to prove a crowd turns the wait off.
        var sendingThreadWaitQuiet: Duration = .milliseconds(10)
        /// How soon after the last answer a request must be sent for its
        /// sender to wait (`sendingThreadWait`): 50 µs, a tight request
        /// loop. Tests set it long (their threads are slow under a
        /// sanitizer); `.zero`: no such condition.
        var sendingThreadWaitGap: Duration = .microseconds(50)
        /// Response limits; each has its own error code.
        public var limits = Limits()
        /// Ask for and decode gzip/deflate bodies (`Accept-Encoding: gzip, deflate`
        /// unless a request sets its own). On by default: it saves bandwidth, and
        /// the decoder is bounded (see `Limits.maxDecompressionRatio`). Codings
        /// other than gzip and deflate are left as sent.
        public var decompression = true
        /// TLS for `https` URLs: verified against the system trust store by default.
        public var tls = PocketTLSConfiguration()
        /// The HTTP proxy for every request (`http://` ones forwarded in
        /// absolute form, `https://` ones through a CONNECT tunnel) unless the
        /// request sets its own (`PocketRequest.proxy`) or its host matches
        /// `noProxy`. nil (the default): the environment decides, when
        /// `proxyFromEnvironment`. `.direct`: no proxy at all.
        public var proxy: PocketProxy?
        /// Hosts reached without the proxy, in `NO_PROXY` syntax (names with
        /// their subdomains, `*`, IP addresses, CIDR blocks). nil (the
        /// default): the environment's `no_proxy`/`NO_PROXY`.
        public var noProxy: [String]?
        /// Read the proxy from the environment as curl does (when `proxy` is
        /// nil): `http_proxy` (lower case only: CGI puts a client's `Proxy:`
        /// header in `HTTP_PROXY`) for `http://`, `https_proxy`/`HTTPS_PROXY`
        /// for `https://`, `all_proxy`/`ALL_PROXY` for both, and
        /// `no_proxy`/`NO_PROXY`. On by default, as curl, wget and most HTTP
        /// stacks on Linux do, so a service behind an egress proxy works
        /// unchanged; turn it off where the environment is not yours to
        /// trust. Read once, when the client is made.
        public var proxyFromEnvironment = true
        /// A Unix domain socket every request goes through instead of its
        /// URL's host and port (curl's `--unix-socket`), unless the request
        /// sets its own (`PocketRequest.unixSocketPath`) or has an
        /// `http+unix`/`https+unix` URL. nil (the default): TCP.
        public var unixSocketPath: String?
        /// How redirects are followed unless a request sets its own
        /// (`PocketRequest.redirects`): up to 10 hops by default, no https → http
        /// (see `PocketRedirectPolicy` for why and for the rules of each hop).
        public var redirects: PocketRedirectPolicy = .follow
        /// The cookie store: nil (the default) keeps no cookies, as a
        /// service-to-service client usually should. With a store, each hop
        /// sends the cookies that match its URL and stores what its response
        /// sets (RFC 6265; see `PocketCookieStore`). One store may serve
        /// several clients; scoped clients share their parent's.
        public var cookies: PocketCookieStore?
        /// Header fields sent with every request unless the request has a field
        /// of the same name. Default: `User-Agent: Pocket/0.2.0`.
        public var defaultHeaders: PocketHeaders = ["User-Agent": "Pocket/0.2.0"]
        /// Schema tags, schema files, options and the error parser for
        /// `send(_:schema:)`: the built-in transformers, no files, no parser
        /// by default (see `PocketSchemaRegistry`).
        public var schemas = PocketSchemaRegistry()
        /// Middleware, retry policy, transport and clock (see `PocketRequestHandling`).
        /// Empty by default: nothing to adapt, retry or report.
        public var handling = PocketRequestHandling()

        // Building requests from paths (`client.request`, templates, scoped clients)

        /// Base URL of relative paths given to `client.request` and templates
        /// without their own; nil by default (a relative path then needs a
        /// template's base URL). Requests made from a URL ignore it.
        public var baseURL: URL?
        /// Format of requests built from paths: JSON by default, as MTPocket.
        public var format: PocketContentFormat = .json
        /// Query parameters added to every request built from a path (under
        /// the template's and the request's own); empty by default.
        public var defaultQuery: [String: PocketParameterValue] = [:]
        /// Query encoding of requests built from paths: brackets for arrays,
        /// `true`/`false` by default (see `PocketQueryEncoding`).
        public var queryEncoding = PocketQueryEncoding()
        /// Validation `send` applies to every response unless the request has
        /// its own; nil by default: any status is a response (see `PocketValidation`
        /// for why), and `send` does no work for it.
        public var validation: PocketValidation?

        /// The defaults described on each property.
        public init() {}
    }

    /// Bounds on what a server may send.
    public struct Limits: Sendable, Hashable {
        /// Status line plus header fields, 64 KiB (`.responseHeadTooLarge`).
        public var maxHeadBytes = 64 * 1024
        /// Header fields per response, 128 (`.tooManyHeaders`).
        public var maxHeaderFields = 128
        /// Hex digits of a chunk size, 16: a 64-bit length (`.chunkSizeTooLong`).
        public var maxChunkSizeDigits = 16
        /// Chunked trailer section, 16 KiB (`.trailersTooLarge`).
        public var maxTrailerBytes = 16 * 1024
        /// 1xx interim responses skipped before the final one, 8 (`.tooManyInterimResponses`).
        public var maxInterimResponses = 8
        /// Body bytes collected into memory, 256 MiB (`.bodyTooLarge`); nil for no limit.
        /// For compressed bodies it counts decoded bytes.
        public var maxBodyBytes: Int? = 256 * 1024 * 1024
        /// Decoded/encoded ratio past `decompressionRatioFloor` that marks a
        /// decompression bomb (`.decompressionBomb`), 200: real text rarely
        /// compresses past 20×.
        public var maxDecompressionRatio = 200
        /// Decoded bytes below which the ratio is not checked, 1 MiB.
        public var decompressionRatioFloor = 1 << 20
        /// Decoded bytes one response body may expand to, whatever the ratio
        /// (`.decodedBodyTooLarge`); nil (the default) for no absolute cap.
        /// Unlike `maxBodyBytes` it also bounds streamed and downloaded
        /// bodies, and it counts only content-coded (gzip, deflate) ones.
        public var maxDecodedBytes: Int? = nil

        /// The defaults described on each limit.
        public init() {}
    }

    /// The configuration the client was created with.
    public let configuration: Configuration
    let engine: Engine
    /// Named templates, shared with scoped clients.
    let templates: TemplateRegistry
    /// Event subscribers and observers (shared with scoped clients).
    let hub: EventHub
    /// No middleware, retry policy or authentication configured (computed
    /// once): the request path then has nothing to adapt or retry for
    /// requests that bring none of their own (a hedging policy still
    /// applies: it is a stage of the one attempt).
    let unadapted: Bool
    /// No retry policy or authentication, and middleware that each say per
    /// request whether they have work (computed once): a request none of
    /// them engages runs as with `unadapted`.
    let gatedOnly: Bool
    /// The retry policy is the only middleware (no authentication, no
    /// retry deadline, the system clock; computed once): a request that
    /// brings none of its own makes its first attempt as with `unadapted`,
    /// and only an outcome the policy may retry goes on to the attempts loop.
    let retriesOnly: Bool
    /// `configuration.handling.cache`, read once per `send`.
    let responseCache: PocketResponseCache?
    /// The client's middleware with its retry policy last (built once).
    let chain: MiddlewareChain
    /// Finished engine requests kept for reuse by collected hops (`CollectDelivery`).
    let spares = InFlightSpares()
    /// Its proxies (configuration, else environment at init); nil when none applies.
    let proxies: ProxyRules?
    /// `configuration.timeouts` in the engine's milliseconds (worked out once).
    let engineTimeouts: EngineTimeouts
    /// When the handling's clock is the system clock: its uptime at
    /// `PocketDeadline.origin`, in nanoseconds (attempts time themselves in
    /// nanoseconds after that origin: the system clock's uptime is then
    /// worked out without reading it); else nil.
    let systemClockOffsetNanos: Int64?
    /// Requests without an `authentication` of their own answer 401
    /// challenges (`configuration.handling.authentication` is set).
    let answersChallenges: Bool
    /// Answers its proxies accepted, sent at once by later requests (Sources/Pocket/Proxy).
    let proxyAnswers = ProxyAnswers()
    /// The budgets of retries and hedges, in one place.
    let extraRequests: ExtraRequestBudget
    /// `configuration.handling.hedging`, read once.
    let hedging: HedgingPolicyBox?
    /// Recent latencies by origin, for percentile hedging delays.
    let latencies = OriginLatencies()
    /// The hedging delays of its requests in flight, on one timer.
    let hedgeTimers = HedgeTimers()
    /// `configuration.handling.transport` is set (read once: the optional
    /// existential is copied out of the configuration on each read).
    let hasTransport: Bool
    /// `configuration.handling.deadlineHeader`, read once.
    let deadlineHeader: String?
    /// Its replica sets and origin breakers; nil when none is configured (Sources/Pocket/Replicas).
    let replicas: ReplicaRouter?

    /// Starts the engine's threads. Fails only if threads or descriptors
    /// cannot be created.
    public convenience init(configuration: Configuration = Configuration()) throws {
        self.init(sharing: try Engine(configuration: configuration), templates: TemplateRegistry(), hub: EventHub(),
                  configuration: configuration)
    }

    /// A client on `engine`'s pool and threads (a scoped client, or a new
    /// client's own, from the public `init`).
    init(sharing engine: Engine, templates: TemplateRegistry, hub: EventHub, configuration: Configuration) {
        self.configuration = configuration
        self.engine = engine
        self.templates = templates
        self.hub = hub
        self.unadapted = configuration.handling.middleware.isEmpty && configuration.handling.retry == nil
            && configuration.handling.authentication == nil
        self.responseCache = configuration.handling.cache
        let chain = MiddlewareChain(configuration.handling.middleware, policy: configuration.handling.retry)
        self.chain = chain
        self.gatedOnly = configuration.handling.retry == nil && configuration.handling.authentication == nil
            && chain.requestGates != nil
        self.proxies = ProxyRules.make(configuration)
        self.engineTimeouts = EngineTimeouts(configuration.timeouts)
        self.systemClockOffsetNanos = configuration.handling.clock is PocketSystemRetryClock
            ? (PocketDeadline.origin - PocketSystemRetryClock.origin).nanoseconds : nil
        self.retriesOnly = configuration.handling.middleware.isEmpty && configuration.handling.authentication == nil
            && configuration.handling.retry.map { $0.deadline == nil } == true && systemClockOffsetNanos != nil
        self.answersChallenges = configuration.handling.authentication != nil
        self.deadlineHeader = configuration.handling.deadlineHeader
        self.extraRequests = ExtraRequestBudget(retries: configuration.handling.retryBudget, hedges: configuration.handling.hedging)
        self.hedging = configuration.handling.hedging.map(HedgingPolicyBox.init)
        self.replicas = ReplicaRouter(configuration)
        self.hasTransport = configuration.handling.transport != nil
    }

    /// Fails every request in flight with `.shutdown`, closes every
    /// connection and stops the engine's threads. Later sends fail with
    /// `.shutdown`. Idempotent.
    public func shutdown() async throws {
        hedgeTimers.stop()
        engine.shutdown()
        hub.finishAll()
    }

    /// The engine's event loop as a `TaskExecutor`.
    ///
    /// Code that runs many requests in a row can run on the loop itself:
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(client.executor) {
    ///     for id in ids { _ = try await client.send(request(for: id)) }
    /// }
    /// ```
    ///
    /// Each response then resumes the waiting task on the loop thread at the
    /// end of the loop's pass, with no thread hop: the fastest way to drive
    /// Pocket, as SwiftNIO users do with an event loop. Code there must not
    /// block (no blocking I/O, no long computation), because it holds up every
    /// connection of the client. Without a preference, tasks run on the global
    /// executor and each response costs one hop back to it.
    public var executor: any TaskExecutor { engine.executor }

    /// Allocations made by the C engine in this process (its allocation
    /// wrapper's count): the benchmark reports it per request.
    public static var engineAllocationCount: UInt64 { Engine.allocationCount }

}
