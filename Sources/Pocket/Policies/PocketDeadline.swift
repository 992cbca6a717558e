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
    @TaskLocal public static var current: ContinuousClock.Instant?

    /// Runs `operation` with `deadline` as the task's deadline (or the
    /// current one when that is earlier).
    public static func withDeadline<R>(at deadline: ContinuousClock.Instant,
                                       isolation: isolated (any Actor)? = #isolation,
                                       _ operation: () async throws -> R) async rethrows -> R {
        try await $current.withValue(earliest(current, deadline), operation: operation, isolation: isolation)
    }

    /// Runs `operation` with a deadline `duration` from now (or the
    /// current one when that is earlier).
    public static func withDeadline<R>(in duration: Duration,
                                       isolation: isolated (any Actor)? = #isolation,
                                       _ operation: () async throws -> R) async rethrows -> R {
        try await $current.withValue(earliest(current, .now + duration), operation: operation, isolation: isolation)
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

    /// `d` in whole milliseconds, rounded down and never negative: the form
    /// a deadline header carries.
    static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
