import Synchronization

/// A step in a client's request pipeline: adapt the request, observe the
/// outcome, decide on a retry. Every hook has a default that does nothing,
/// so a middleware implements only what it needs.
///
/// Middleware run in order for `adapt` (the first installed adapts first),
/// in reverse for `observe` (the first installed sees the outcome last, like
/// the layers of an onion), and in order for `retry` (the first opinion wins;
/// without one, the retry policy decides). Hooks run once per attempt.
///
/// ```swift
/// struct APIKey: PocketMiddleware {
///     func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
///         var request = request
///         request.headers["X-API-Key"] = "secret"
///         return request
///     }
/// }
/// ```
public protocol PocketMiddleware: Sendable {
    /// Returns the request to send for this attempt. Throwing fails the
    /// attempt with that error (the retry policy sees it). Default: unchanged.
    func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest

    /// Sees the outcome of an attempt: the response (any status) or the error.
    /// `request` is the request as sent. Default: nothing.
    func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async

    /// Says whether to retry; nil (the default) leaves it to the next
    /// middleware, then to the retry policy. A middleware's `.retry` counts
    /// against the retry policy's `maxAttempts` (3 without a policy), as the
    /// policy's own retries do. Throwing ends the request with that error.
    func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
               context: PocketMiddlewareContext) async throws -> PocketRetryDecision?

    /// The hooks this middleware implements: the chain calls only these.
    /// Read once, when the chain is built (when the client is made, or
    /// for a request that brings middleware of its own). Default: all
    /// three. A middleware that has nothing to do in a configuration (a
    /// metrics reporter with no backend) declares none and costs nothing:
    /// a request whose hooks observe nothing returns its response without
    /// making an outcome for them.
    var hooks: PocketMiddlewareHooks { get }
}

/// A middleware whose `observe` has work only for some attempts (the
/// tracing middleware's: only when its `adapt` started a span). Asked after
/// each attempt, before any `observe`: an attempt none of whose observers
/// has work returns its response at once, as with no observer.
package protocol PocketAttemptObserver: PocketMiddleware {
    /// Whether `observe` has work for the attempt `context` describes.
    func observes(_ context: PocketMiddlewareContext) -> Bool
}

/// Which of a middleware's hooks the chain calls (`PocketMiddleware.hooks`).
public struct PocketMiddlewareHooks: OptionSet, Sendable, Hashable {
    /// The set's bits (`adapt` 1, `observe` 2, `retry` 4).
    public let rawValue: UInt8
    /// Makes a hook set from its raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `adapt` is called before each attempt.
    public static let adapt = PocketMiddlewareHooks(rawValue: 1)
    /// `observe` is called with each attempt's outcome.
    public static let observe = PocketMiddlewareHooks(rawValue: 2)
    /// `retry` is asked about each failed attempt.
    public static let retry = PocketMiddlewareHooks(rawValue: 4)
    /// Every hook: the default.
    public static let all: PocketMiddlewareHooks = [.adapt, .observe, .retry]
}

extension PocketMiddleware {
    /// Every hook (override to declare fewer).
    public var hooks: PocketMiddlewareHooks { .all }

    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest { request }
    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {}
    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? { nil }
}

/// A middleware made of closures, for one-off hooks.
///
/// ```swift
/// config.handling.middleware.append(PocketClosureMiddleware(adapt: { request, _ in
///     var request = request; request.headers["X-Trace"] = UUID().uuidString; return request
/// }))
/// ```
public struct PocketClosureMiddleware: PocketMiddleware {
    // nonisolated(nonsending): the closure runs on the caller's executor,
    // entered without the two executor switches of a concurrent one.
    typealias Adapt = nonisolated(nonsending) @Sendable (PocketRequest, PocketMiddlewareContext) async throws -> PocketRequest
    let adaptBody: Adapt?
    let observeBody: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async -> Void)?
    let retryBody: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async throws -> PocketRetryDecision?)?

    /// Any hook left nil does nothing.
    public init(adapt: (nonisolated(nonsending) @Sendable (PocketRequest, PocketMiddlewareContext) async throws -> PocketRequest)? = nil,
                observe: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async -> Void)? = nil,
                retry: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async throws -> PocketRetryDecision?)? = nil) {
        adaptBody = adapt
        observeBody = observe
        retryBody = retry
    }

    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
        try await adaptBody?(request, context) ?? request
    }

    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {
        await observeBody?(outcome, request, context)
    }

    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? {
        try await retryBody?(outcome, request, context)
    }

    /// The hooks given as closures.
    public var hooks: PocketMiddlewareHooks {
        var hooks: PocketMiddlewareHooks = []
        if adaptBody != nil { hooks.insert(.adapt) }
        if observeBody != nil { hooks.insert(.observe) }
        if retryBody != nil { hooks.insert(.retry) }
        return hooks
    }
}

/// The chain a request runs through: the middleware, the retry policy last,
/// and which of them have an `adapt`, an `observe` and a `retry` to call
/// (`PocketMiddleware.hooks`: a `PocketClosureMiddleware` without that
/// closure, the retry policy's `adapt` and `observe`, a middleware that
/// declares it has nothing to do). The request path neither calls the
/// others nor builds what they would be handed. Built once per client;
/// again for a request that brings middleware or a policy of its own.
// A class: a request takes it with one retain, not a copy of its arrays
// and of the policy's sets and closures.
final class MiddlewareChain: Sendable {
    /// Every middleware, the retry policy last.
    let all: [any PocketMiddleware]
    /// The retry policy, also `all`'s last (nil without one).
    let policy: PocketRetryPolicy?
    /// Those whose `adapt` does something, in order: a closure
    /// middleware's closure is called directly (not through its `adapt`,
    /// one async call less), others by index.
    let adapters: [Adapter]

    enum Adapter: Sendable {
        case closure(PocketClosureMiddleware.Adapt)
        case middleware(Int)
    }
    /// Indices of those whose `observe` does something, in order (called in reverse).
    let observers: [Int]
    /// For each of `observers`, the one that says per attempt whether it
    /// has work (`PocketAttemptObserver`), nil for one that always has.
    let observerGates: [(any PocketAttemptObserver)?]
    /// Whether some observer has work after every attempt.
    let alwaysObserves: Bool
    /// Those asked `retry`, in order (the policy last).
    let retriers: [any PocketMiddleware]

    init(_ middleware: [any PocketMiddleware], policy: PocketRetryPolicy?) {
        all = policy.map { middleware + [$0] } ?? middleware
        self.policy = policy
        var adapters: [Adapter] = [], observers: [Int] = [], retriers: [any PocketMiddleware] = []
        var gates: [(any PocketAttemptObserver)?] = []
        for (i, m) in all.enumerated() {
            let hooks = m.hooks
            if hooks.contains(.retry) { retriers.append(m) }
            if let closures = m as? PocketClosureMiddleware, let adapt = closures.adaptBody {
                adapters.append(.closure(adapt))
            } else if hooks.contains(.adapt) {
                adapters.append(.middleware(i))
            }
            if hooks.contains(.observe) {
                observers.append(i)
                gates.append(m as? any PocketAttemptObserver)
            }
        }
        self.adapters = adapters
        self.observers = observers
        observerGates = gates
        alwaysObserves = gates.contains { $0 == nil }
        self.retriers = retriers
    }

    /// Whether any observer has work for the attempt `context` describes.
    func observes(_ context: PocketMiddlewareContext) -> Bool {
        alwaysObserves || observerGates.contains { $0?.observes(context) ?? true }
    }
}

/// What a middleware knows about the request it is handling: which task,
/// which attempt, how long the attempt took, plus a small per-request
/// store that lives across attempts (e.g. how often a token was refreshed
/// for this request).
public final class PocketMiddlewareContext: Sendable {
    /// The task's id, as in its `PocketTaskEvent`s.
    public var taskID: UInt64 { fields.taskID }
    /// The endpoint key observers subscribe to (the URL path unless the
    /// caller or a `PocketEndpoint` named one).
    public var endpoint: String { fields.endpointValue }
    /// The task's fixed fields; its events reference this context for them.
    let fields: TaskFields
    /// The client's clock (`PocketRequestHandling.clock`).
    var clock: any PocketRetryClock { customClock ?? PocketSystemRetryClock() }
    /// The client's clock unless it is the system clock.
    private let customClock: (any PocketRetryClock)?
    /// When the first attempt started, on `clock`.
    let started: Duration
    // One allocation per request: the attempt's number and duration are
    // atomics in the context itself; the rarely used rest (a validation
    // failure, stored values) lives behind a lock made on first use.
    private let attemptNumber = Atomic<Int>(0)
    private let elapsedNanos = Atomic<Int64>(0)
    private let extras = AtomicLazyReference<Extras>()

    private final class Extras: Sendable {
        let state = Lock(State())
        struct State {
            var validationFailure: PocketError?
            var values: [String: any Sendable] = [:]
            var deadline: ContinuousClock.Instant?
        }
    }

    init(fields: TaskFields, clock: (any PocketRetryClock)?, started: Duration) {
        self.fields = fields
        self.customClock = clock
        self.started = started
    }

    private var madeExtras: Extras {
        extras.load() ?? extras.storeIfNil(Extras())
    }

    /// The current attempt, 1 for the first.
    public var attempt: Int { attemptNumber.load(ordering: .acquiring) }

    /// How long the current attempt took, from `adapt` to its outcome
    /// (valid in `observe` and `retry`).
    public var attemptElapsed: Duration { .nanoseconds(elapsedNanos.load(ordering: .acquiring)) }

    /// Time since the first attempt started, on the client's clock.
    public var elapsed: Duration { clock.uptime() - started }

    /// Why the current attempt's response failed validation (the request's
    /// `PocketValidation`, else the client's), or nil when it passed or there
    /// is none (valid in `observe` and `retry`). Such a response reaches the
    /// hooks as `.success`; the caller gets this error.
    public var validationFailure: PocketError? { extras.load()?.state.withLock { $0.validationFailure } }

    /// The request's deadline: the task's (`PocketDeadline.current`) when
    /// the request started, or one a middleware's `adapt` set (PocketTracing
    /// sets the one its `ServiceContext` carries); nil when none. Setting it
    /// keeps the earlier of the two: a deadline is only ever tightened. Every
    /// later attempt, hedge, backoff wait and redirect hop of the request
    /// shares it; past it the request fails with `.deadlineExceeded`.
    public var deadline: ContinuousClock.Instant? {
        get { extras.load()?.state.withLock { $0.deadline } }
        set {
            guard let newValue else { return }
            PocketDeadline.noteUse()
            madeExtras.state.withLock { $0.deadline = PocketDeadline.earliest($0.deadline, newValue) }
        }
    }

    /// A value stored for this request under `key`, or nil.
    public subscript(key: String) -> (any Sendable)? {
        get { extras.load()?.state.withLock { $0.values[key] } }
        set { madeExtras.state.withLock { $0.values[key] = newValue } }
    }

    func begin(attempt: Int) {
        attemptNumber.store(attempt, ordering: .releasing)
        elapsedNanos.store(0, ordering: .releasing)
        // Only a previous attempt can have left a failure (and the extras'
        // generic `load` is not free: skip it on the first).
        if attempt > 1 { extras.load()?.state.withLock { $0.validationFailure = nil } }
    }

    func end(elapsed: Duration, validationFailure: PocketError?) {
        let (seconds, attoseconds) = elapsed.components
        elapsedNanos.store(seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000, ordering: .releasing)
        if let validationFailure { madeExtras.state.withLock { $0.validationFailure = validationFailure } }
    }
}

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

/// Options for one `send`: its own middleware, retry and hedging policies,
/// observers and endpoint key. The defaults add nothing to the client's configuration.
public struct PocketSendOptions: Sendable {
    /// Middleware for this request, run after the client's. Empty by default.
    public var middleware: [any PocketMiddleware] = []
    /// Replaces the client's retry policy for this request; nil keeps it.
    public var retry: PocketRetryPolicy? {
        get { policies?.retry }
        set { policies = Policies.make(retry: newValue, hedging: hedging) }
    }
    /// Replaces the client's hedging policy for this request; nil keeps it.
    public var hedging: PocketHedgingPolicy? {
        get { policies?.hedging }
        set { policies = Policies.make(retry: retry, hedging: newValue) }
    }
    /// Neither a retry nor a hedging policy of its own (one nil check).
    var hasNoPolicies: Bool { policies == nil }
    // Boxed: a policy is over a hundred bytes, and the options are passed
    // (and copied) on every send, which almost never sets one.
    private var policies: Policies?
    private final class Policies: Sendable {
        let retry: PocketRetryPolicy?
        let hedging: PocketHedgingPolicy?
        init(_ retry: PocketRetryPolicy?, _ hedging: PocketHedgingPolicy?) { (self.retry, self.hedging) = (retry, hedging) }
        static func make(retry: PocketRetryPolicy?, hedging: PocketHedgingPolicy?) -> Policies? {
            retry == nil && hedging == nil ? nil : Policies(retry, hedging)
        }
    }
    /// Observers of this task's events. None by default.
    public var observers: [PocketTaskObserver] = []
    /// The key endpoint observers subscribe to; nil (the default) uses the URL's path.
    public var endpoint: String?

    /// The defaults: nothing added to the client's configuration. (`send`'s
    /// default options: no policy is passed in only to be dropped.)
    public init() {}

    /// Options; each parameter defaults as its property says.
    public init(middleware: [any PocketMiddleware] = [], retry: PocketRetryPolicy? = nil, observers: [PocketTaskObserver] = [],
                endpoint: String? = nil, hedging: PocketHedgingPolicy? = nil) {
        self.middleware = middleware
        if retry != nil || hedging != nil { self.policies = Policies(retry, hedging) }
        self.observers = observers
        self.endpoint = endpoint
    }
}

/// What carries a request and brings back its response: the client's engine
/// by default, or a `PocketStubTransport` for tests with no network. The whole
/// request pipeline (middleware, retries, events) runs on top of it.
public protocol PocketTransport: Sendable {
    /// Sends `request` and returns the complete response, or throws.
    func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse
}
