/// What a client does around each request, beyond sending it: middleware,
/// retries, the transport and the clock. Everything is off by default: the
/// request path then has nothing to adapt, retry or report.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.middleware = [PocketLoggingMiddleware(logger: logger)]
/// config.handling.retry = PocketRetryPolicy()
/// let client = try PocketClient(configuration: config)
/// ```
///
/// It applies to every way of sending: `send` and what is built on it
/// (endpoints, pipes, callbacks, groups), queues, `stream` and downloads.
/// Adaptation always applies; retries apply until the first byte of the
/// body reaches the caller (a streamed response's head, a download's first
/// byte written), since bytes already handed over cannot be taken back.
public struct PocketRequestHandling: Sendable {
    /// The client's middleware, in order (see `PocketMiddleware` for the order of
    /// hooks). Empty by default. Requests can add their own (`PocketSendOptions`).
    public var middleware: [any PocketMiddleware] = []
    /// The client's retry policy, run as the chain's last middleware; nil by
    /// default (no retries of its own): retrying changes latency and load,
    /// so it is the caller's choice. Requests and endpoints can set their
    /// own. Its `maxAttempts` is the one cap on attempts (3 without a policy).
    public var retry: PocketRetryPolicy?
    /// What sends requests; nil (the default) is the client's engine. Set a
    /// `PocketStubTransport` to run with canned responses and no network.
    public var transport: (any PocketTransport)?
    /// Time for backoff waits, deadlines and stub delays; the system clock by default.
    public var clock: any PocketRetryClock = PocketSystemRetryClock()
    /// How requests answer 401 challenges (Basic, Digest) when they have no
    /// `authentication` of their own; nil (the default): a 401 is returned
    /// as it is.
    public var authentication: PocketAuthentication?
    /// How requests answer a proxy's `407 Proxy Authentication Required`
    /// (Basic, Digest; for forwarded `http://` requests and for the CONNECT
    /// of `https://` ones) when the proxy has no user and password of its
    /// own (`PocketProxy.username`, which answer first). Its `origin`, when
    /// set, names the one proxy it answers (`http://host:port`); its handler
    /// sees `challenge.isProxy` true. The same rules as for a 401: answered
    /// once, a refused credential is not sent again, Digest over Basic, a
    /// one-shot body fails with `.bodyNotReplayable`; an accepted answer is
    /// sent at once by later requests through that proxy. nil (the
    /// default): a 407 the proxy's own credentials cannot answer is the
    /// `.proxyAuthenticationRequired` error, naming the proxy.
    public var proxyAuthentication: PocketAuthentication?
    /// The response cache (RFC 9111, private); nil (the default): none.
    public var cache: PocketResponseCache?
    /// Hedged requests: a second request, after a delay, for an idempotent
    /// one whose answer is late (`PocketHedgingPolicy`); nil (the default):
    /// none, since hedging adds load. Requests can set their own
    /// (`PocketSendOptions.hedging`).
    public var hedging: PocketHedgingPolicy?
    /// How many retries the client may make on top of the requests it sends
    /// (`PocketRetryBudget`: 20 % of them plus 10 a second by default), shared
    /// by all of its requests, so that retries can never multiply the load on
    /// failing servers; nil: retries are bounded by `maxAttempts` alone.
    public var retryBudget: PocketRetryBudget? = .default
    /// The header field that carries the time left before the request's
    /// deadline (`PocketDeadline`) downstream, in whole milliseconds, e.g.
    /// `"X-Request-Timeout-Ms"`; nil (the default) sends none: the name is
    /// an agreement between the services, and most do not read one. Each
    /// attempt and hedge sends what is left when it starts.
    public var deadlineHeader: String?

    /// Nothing configured: the direct path.
    public init() {}
}
