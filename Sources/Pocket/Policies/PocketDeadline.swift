import Synchronization

/// A deadline for everything a task sends: a task-local instant that bounds
/// every request made under it, on any client. All of a request's attempts,
/// hedges, backoff waits and redirect hops share it; each attempt's total
/// timeout (the engine's timer) is cut to what is left, a backoff that would
/// sleep past it is not waited, and when it passes the request ends with
/// `.deadlineExceeded` (a code of its own: the per-request total timeout is
/// `.totalTimeout`).
///
/// ```swift
/// try await PocketDeadline.withDeadline(in: .milliseconds(250)) {
///     let user = try await client.send(PocketRequest(url: usersURL))
///     let feed = try await client.send(PocketRequest(url: feedURL))   // what is left of the 250 ms
/// }
/// ```
///
/// A nested deadline never extends an outer one: the earlier of the two
/// holds. No deadline is set by default (a request is bounded by its own
/// timeouts only). `PocketClient.Configuration.handling.deadlineHeader`
/// sends the time left downstream; PocketTracing carries the deadline in a
/// `ServiceContext` too.
public enum PocketDeadline {
    /// The current task's deadline, or nil (the default) for none.
    public static var current: ContinuousClock.Instant? { inUse ? stored : nil }

    @TaskLocal private static var stored: ContinuousClock.Instant?

    /// Whether a deadline has been set yet in this process, on a task or a
    /// request's middleware context: until one is, no request has one, and
    /// the request path reads neither the task-local nor the context. Set
    /// before the deadline is bound; a task sees the binding only after it
    /// (its own, or its parent's before it started).
    private static let everSet = Atomic<Bool>(false)

    /// Whether a deadline may be set anywhere (see `everSet`).
    @inline(__always)
    static var inUse: Bool { everSet.load(ordering: .relaxed) }

    /// Notes that a deadline is set (`everSet`).
    @inline(__always)
    static func noteUse() { everSet.store(true, ordering: .relaxed) }

    /// The current task's deadline, if any, made `context`'s. Out of line
    /// and synchronous: an optional `ContinuousClock.Instant` (a type whose
    /// size is known only at run time outside the standard library) held in
    /// an async caller costs that caller a task allocation.
    @inline(never)
    static func adopt(into context: PocketMiddlewareContext) {
        if let deadline = current { context.deadline = deadline }
    }

    /// Runs `operation` with `deadline` as the task's deadline (or the
    /// current one when that is earlier).
    public static func withDeadline<R>(at deadline: ContinuousClock.Instant,
                                       isolation: isolated (any Actor)? = #isolation,
                                       _ operation: () async throws -> R) async rethrows -> R {
        noteUse()
        // An earlier deadline already bound holds: nothing to bind.
        if let current, current <= deadline { return try await operation() }
        return try await $stored.withValue(deadline, operation: operation, isolation: isolation)
    }

    /// Runs `operation` with a deadline `duration` from now (or the
    /// current one when that is earlier).
    public static func withDeadline<R>(in duration: Duration,
                                       isolation: isolated (any Actor)? = #isolation,
                                       _ operation: () async throws -> R) async rethrows -> R {
        try await withDeadline(at: .now + duration, isolation: isolation, operation)
    }

    /// The time left before the current deadline (negative once it has
    /// passed), or nil when the task has none.
    public static var remaining: Duration? { current.map { $0 - .now } }

    /// The earlier of two deadlines; nil only when both are.
    public static func earliest(_ a: ContinuousClock.Instant?, _ b: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }

    /// The instant deadlines are kept from as whole nanoseconds (in an
    /// atomic of the middleware context).
    static let origin = ContinuousClock.now

    /// `instant` in nanoseconds after `origin` (saturating).
    static func nanoseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        (instant - origin).nanoseconds
    }

    /// The instant `nanoseconds` after `origin`; nil for `.max` (none).
    static func instant(_ nanoseconds: Int64) -> ContinuousClock.Instant? {
        nanoseconds == .max ? nil : origin + .nanoseconds(nanoseconds)
    }

    /// `d` in whole milliseconds, rounded down and never negative: the form
    /// a deadline header carries.
    static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
