import Synchronization

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
    /// The deadline in nanoseconds after `PocketDeadline.origin`; `.max` for none.
    /// Inline, not in the extras: a task deadline is set on every request
    /// made under one, so it must not cost an allocation.
    private let deadlineNanos = Atomic<Int64>(.max)
    private let extras = AtomicLazyReference<Extras>()
    /// The object a middleware of this package keeps from `adapt` to
    /// `observe` of one attempt (PocketTracing's span), retained while
    /// here: an atomic exchange, where the store (`subscript(key:)`) makes
    /// its lock and list on first use and boxes the value.
    private let attemptObject = Atomic<Unmanaged<AnyObject & Sendable>?>(nil)

    private final class Extras: Sendable {
        let state = Lock(State())
        struct State {
            var validationFailure: PocketError?
            /// A middleware's own values: a few per request at most, so a
            /// list searched in order (no hashing; a key is compared to a
            /// few others, usually the same literal).
            var values: [(key: String, value: any Sendable)] = []
        }
    }

    init(fields: TaskFields, clock: (any PocketRetryClock)?, started: Duration) {
        self.fields = fields
        self.customClock = clock
        self.started = started
    }

    deinit {
        attemptObject.exchange(nil, ordering: .acquiring)?.release()
    }

    /// Keeps `object` for the current attempt, in place of any kept before.
    package func keepAttemptObject(_ object: AnyObject & Sendable) {
        attemptObject.exchange(Unmanaged.passRetained(object), ordering: .acquiringAndReleasing)?.release()
    }

    /// Takes the object kept for the attempt, if any (none is kept after).
    package func takeAttemptObject() -> (AnyObject & Sendable)? {
        attemptObject.exchange(nil, ordering: .acquiringAndReleasing)?.takeRetainedValue()
    }

    /// Whether an object is kept for the attempt.
    package var keepsAttemptObject: Bool { attemptObject.load(ordering: .acquiring) != nil }

    private var madeExtras: Extras {
        extras.load() ?? extras.storeIfNil(Extras())
    }

    /// The current attempt, 1 for the first.
    public var attempt: Int { attemptNumber.load(ordering: .acquiring) }

    /// How long the current attempt took, from `adapt` to its outcome
    /// (valid in `observe` and `retry`).
    public var attemptElapsed: Duration { .nanoseconds(elapsedNanos.load(ordering: .acquiring)) }

    /// `attemptElapsed` in nanoseconds, as it is kept (for the package's
    /// metrics middleware: no `Duration` made and taken apart again).
    package var attemptElapsedNanoseconds: Int64 { elapsedNanos.load(ordering: .acquiring) }

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
        get { PocketDeadline.instant(deadlineNanos.load(ordering: .acquiring)) }
        set {
            guard let newValue else { return }
            PocketDeadline.noteUse()
            deadlineNanos.min(PocketDeadline.bound(newValue), ordering: .acquiringAndReleasing)
        }
    }

    /// `deadline` in nanoseconds after `PocketDeadline.origin`; `.max` for none.
    var deadlineNanoseconds: Int64 { deadlineNanos.load(ordering: .acquiring) }

    /// The deadline made `nanoseconds` (after `PocketDeadline.origin`) when
    /// that is earlier; `.max` (none) changes nothing.
    func tighten(deadlineNanos nanoseconds: Int64) {
        if nanoseconds != .max { deadlineNanos.min(nanoseconds, ordering: .acquiringAndReleasing) }
    }

    /// A value stored for this request under `key`, or nil.
    public subscript(key: String) -> (any Sendable)? {
        get { extras.load()?.state.withLock { state in state.values.first { $0.key == key }?.value } }
        set {
            // Removing from a request that stored nothing makes nothing.
            guard newValue != nil || extras.load() != nil else { return }
            madeExtras.state.withLock { state in
                let index = state.values.firstIndex { $0.key == key }
                switch (index, newValue) {
                case let (index?, value?): state.values[index].value = value
                case let (index?, nil): state.values.remove(at: index)
                case let (nil, value?): state.values.append((key, value))
                case (nil, nil): break
                }
            }
        }
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
