/// What a client does around each request, beyond sending it: middleware,
/// retries, the transport and the clock. Everything is off by default,
/// which keeps `send` on its direct path (no extra allocation per request).
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.middleware = [LoggingMiddleware(logger: logger)]
/// config.handling.retry = RetryPolicy()
/// let client = try PocketClient(configuration: config)
/// ```
///
/// It applies to `send` (and what is built on it: queues, groups,
/// endpoints). `stream` and downloads go straight to the engine: a body
/// consumed as it arrives cannot be replayed by a retry.
public struct PocketRequestHandling: Sendable {
    /// The client's middleware, in order (see `PocketMiddleware` for the order of
    /// hooks). Empty by default. Requests can add their own (`PocketSendOptions`).
    public var middleware: [any PocketMiddleware] = []
    /// The client's retry policy; nil by default (one attempt): retrying
    /// changes latency and load, so it is the caller's choice. Requests and
    /// endpoints can set their own.
    public var retry: PocketRetryPolicy?
    /// What sends requests; nil (the default) is the client's engine. Set a
    /// `PocketStubTransport` to run with canned responses and no network.
    public var transport: (any PocketTransport)?
    /// Time for backoff waits, deadlines and stub delays; the system clock by default.
    public var clock: any PocketRetryClock = PocketSystemRetryClock()
    /// Attempts per request whatever middleware says, 10 by default: a
    /// guard against a middleware that keeps asking for retries (`.tooManyAttempts`).
    public var maxAttempts = 10

    /// Nothing configured: the direct path.
    public init() {}

    /// True when `send` must go through the pipeline.
    var isActive: Bool { !middleware.isEmpty || retry != nil || transport != nil }
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
