/// What a client does around each request, beyond sending it: middleware,
/// retries, the transport and the clock. Everything is off by default: the
/// request path then has nothing to adapt, retry or report.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.middleware = [LoggingMiddleware(logger: logger)]
/// config.handling.retry = RetryPolicy()
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

    /// Nothing configured: the direct path.
    public init() {}
}

/// Options for one `send`: its own middleware, retry policy, observers and
/// endpoint key. The defaults add nothing to the client's configuration.
public struct PocketSendOptions: Sendable {
    /// Middleware for this request, run after the client's. Empty by default.
    public var middleware: [any PocketMiddleware] = []
    /// Replaces the client's retry policy for this request; nil keeps it.
    public var retry: PocketRetryPolicy?
    /// Observers of this task's events. None by default.
    public var observers: [PocketTaskObserver] = []
    /// The key endpoint observers subscribe to; nil (the default) uses the URL's path.
    public var endpoint: String?

    /// Options; each parameter defaults as its property says.
    public init(middleware: [any PocketMiddleware] = [], retry: PocketRetryPolicy? = nil, observers: [PocketTaskObserver] = [],
                endpoint: String? = nil) {
        self.middleware = middleware
        self.retry = retry
        self.observers = observers
        self.endpoint = endpoint
    }
}
