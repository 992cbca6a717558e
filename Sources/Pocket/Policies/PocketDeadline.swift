import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
    public static var current: ContinuousClock.Instant? { instant(currentNanos) }

    /// The task's deadline in nanoseconds after `origin`; `.max` for none.
    /// An `Int64`, not an optional `ContinuousClock.Instant`: that type's
    /// size is known only at run time outside the standard library, so a
    /// task-local of it is bound, read and copied through its value
    /// witnesses, several times the cost of the whole binding.
    @TaskLocal private static var stored: Int64 = .max

    /// The current task's deadline in nanoseconds after `origin`; `.max`
    /// for none (the task-local is not read until a deadline has been set).
    @inline(__always)
    static var currentNanos: Int64 { inUse ? stored : .max }

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

    /// The current task's deadline, if any, made `context`'s.
    @inline(__always)
    static func adopt(into context: PocketMiddlewareContext) {
        context.tighten(deadlineNanos: currentNanos)
    }

    /// Runs `operation` with `deadline` as the task's deadline (or the
    /// current one when that is earlier), on the caller's executor: binding
    /// the deadline switches no executor.
    nonisolated(nonsending) public static func withDeadline<R>(at deadline: ContinuousClock.Instant,
                                                               _ operation: nonisolated(nonsending) () async throws -> R)
        async rethrows -> R {
        try await withDeadline(nanoseconds: bound(deadline), operation)
    }

    /// Runs `operation` with a deadline `duration` from now (or the
    /// current one when that is earlier), on the caller's executor.
    nonisolated(nonsending) public static func withDeadline<R>(in duration: Duration,
                                                               _ operation: nonisolated(nonsending) () async throws -> R)
        async rethrows -> R {
        try await withDeadline(nanoseconds: bound(after: duration), operation)
    }

    /// `withDeadline(at:_:)` with `operation` run isolated to `isolation`.
    public static func withDeadline<R>(at deadline: ContinuousClock.Instant, isolation: isolated (any Actor)?,
                                       _ operation: () async throws -> R) async rethrows -> R {
        try await withDeadline(nanoseconds: bound(deadline), isolation: isolation, operation)
    }

    /// `withDeadline(in:_:)` with `operation` run isolated to `isolation`.
    public static func withDeadline<R>(in duration: Duration, isolation: isolated (any Actor)?,
                                       _ operation: () async throws -> R) async rethrows -> R {
        try await withDeadline(nanoseconds: bound(after: duration), isolation: isolation, operation)
    }

    /// The deadline bound, given in nanoseconds after `origin` (worked out
    /// by the synchronous `bound`s: an instant held by an async function
    /// is allocated on its task, the type being resilient). The task-local
    /// is bound where the caller runs, with no executor check on entry or
    /// exit (the standard library's `withValue` takes an `isolation` and
    /// checks whether to switch to it; its variant for callers that inherit
    /// their executor does not), as a `nonisolated(nonsending)` function runs.
    @inline(__always)
    nonisolated(nonsending) private static func withDeadline<R>(nanoseconds nanos: Int64,
                                                        _ operation: nonisolated(nonsending) () async throws -> R)
        async rethrows -> R {
        noteUse()
        // An earlier deadline already bound holds: nothing to bind.
        if stored <= nanos { return try await operation() }
        return try await $stored._unsafeInheritExecutor_withValue(nanos, operation: operation)
    }

    @inline(__always)
    private static func withDeadline<R>(nanoseconds nanos: Int64, isolation: isolated (any Actor)?,
                                        _ operation: () async throws -> R) async rethrows -> R {
        noteUse()
        if stored <= nanos { return try await operation() }
        return try await $stored.withValue(nanos, operation: operation, isolation: isolation)
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

    /// The instant deadlines are kept from as whole nanoseconds, and the
    /// continuous clock's raw reading (CLOCK_BOOTTIME, `ContinuousClock`'s on
    /// Linux) taken just before it: a time read from the raw clock
    /// (`nowNanos`) is never earlier than the same moment's instant.
    private static let epoch: (instant: ContinuousClock.Instant, raw: Int64) = {
        let raw = rawClock()
        return (ContinuousClock.now, raw)
    }()

    /// The instant deadlines are kept from (`epoch`).
    static var origin: ContinuousClock.Instant { epoch.instant }

    /// `instant` in nanoseconds after `origin` (saturating).
    static func nanoseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        (instant - origin).nanoseconds
    }

    /// A deadline at `instant`, in nanoseconds after `origin`: never
    /// `.max`, which means none.
    static func bound(_ instant: ContinuousClock.Instant) -> Int64 {
        min(nanoseconds(instant), .max - 1)
    }

    /// A deadline `duration` from now, in nanoseconds after `origin`
    /// (saturating): never `.max`. From the raw clock, as every time the
    /// request path reads: `current` (an instant made from it) reads as
    /// much later than `.now + duration` as the raw clock's origin was read
    /// before `origin`, a moment (see `epoch`).
    static func bound(after duration: Duration) -> Int64 {
        let (sum, overflow) = nowNanos().addingReportingOverflow(duration.nanoseconds)
        return overflow ? (duration > .zero ? .max - 1 : .min) : min(sum, .max - 1)
    }

    /// The instant `nanoseconds` after `origin`; nil for `.max` (none).
    static func instant(_ nanoseconds: Int64) -> ContinuousClock.Instant? {
        nanoseconds == .max ? nil : origin + .nanoseconds(nanoseconds)
    }

    /// Now, in nanoseconds after `origin`, read from the raw clock: a
    /// `ContinuousClock.now` would be turned into nanoseconds through
    /// 128-bit arithmetic (a division) each time.
    static func nowNanos() -> Int64 {
        let start = epochRaw   // made first (its raw reading precedes this one)
        return rawClock() &- start
    }

    /// `epoch.raw`, kept apart: reading it from the tuple copies the tuple,
    /// whose instant (a resilient type) is allocated for the copy.
    private static let epochRaw: Int64 = epoch.raw

    private static func rawClock() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// `d` in whole milliseconds, rounded down and never negative: the form
    /// a deadline header carries.
    static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// `nanoseconds` in whole milliseconds, rounded down and never negative.
    static func milliseconds(nanoseconds: Int64) -> Int64 {
        max(0, nanoseconds / 1_000_000)
    }
}
