/// What a middleware knows about the request it is handling: which task,
/// which attempt, how long the attempt took, plus a small per-request
/// store that lives across attempts (e.g. how often a token was refreshed
/// for this request).
public final class PocketMiddlewareContext: Sendable {
    /// The task's id, as in its `PocketTaskEvent`s.
    public let taskID: UInt64
    /// The endpoint key observers subscribe to (the URL path unless the
    /// caller or a `PocketEndpoint` named one).
    public let endpoint: String
    /// The client's clock (`PocketRequestHandling.clock`).
    let clock: any PocketRetryClock
    /// When the first attempt started, on `clock`.
    let started: Duration
    private let state: Lock<State>

    struct State {
        var attempt = 0
        var attemptElapsed: Duration = .zero
        var validationFailure: PocketError?
        var values: [String: any Sendable] = [:]
    }

    init(taskID: UInt64, endpoint: String, clock: any PocketRetryClock) {
        self.taskID = taskID
        self.endpoint = endpoint
        self.clock = clock
        self.started = clock.uptime()
        self.state = Lock(State())
    }

    /// The current attempt, 1 for the first.
    public var attempt: Int { state.withLock { $0.attempt } }

    /// How long the current attempt took, from `adapt` to its outcome
    /// (valid in `observe` and `retry`).
    public var attemptElapsed: Duration { state.withLock { $0.attemptElapsed } }

    /// Time since the first attempt started, on the client's clock.
    public var elapsed: Duration { clock.uptime() - started }

    /// Why the current attempt's response failed validation (the request's
    /// `PocketValidation`, else the client's), or nil when it passed or there
    /// is none (valid in `observe` and `retry`). Such a response reaches the
    /// hooks as `.success`; the caller gets this error.
    public var validationFailure: PocketError? { state.withLock { $0.validationFailure } }

    /// A value stored for this request under `key`, or nil.
    public subscript(key: String) -> (any Sendable)? {
        get { state.withLock { $0.values[key] } }
        set { state.withLock { $0.values[key] = newValue } }
    }

    func begin(attempt: Int) {
        state.withLock {
            $0.attempt = attempt
            $0.attemptElapsed = .zero
            $0.validationFailure = nil
        }
    }

    func end(elapsed: Duration, validationFailure: PocketError?) {
        state.withLock {
            $0.attemptElapsed = elapsed
            $0.validationFailure = validationFailure
        }
    }
}
