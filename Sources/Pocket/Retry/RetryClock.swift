#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The time source of retries, delayed stubs and queue metrics. The client
/// uses `PocketSystemRetryClock`; tests inject a clock that records each sleep
/// and returns at once, so a backoff schedule is checked without waiting.
public protocol PocketRetryClock: Sendable {
    /// Monotonic time since an arbitrary origin: deadlines are measured on it.
    func uptime() -> Duration
    /// Wall-clock time: `Retry-After` dates are compared with it.
    func date() -> Date
    /// Waits `duration`; throws `CancellationError` (or a `PocketError`
    /// `.cancelled`) when the calling task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The real clock: `ContinuousClock` for uptime and sleeping, the system
/// time for dates.
public struct PocketSystemRetryClock: PocketRetryClock {
    private static let origin = ContinuousClock.now

    /// The system clock.
    public init() {}

    /// Time on `ContinuousClock` since the first use of this type.
    public func uptime() -> Duration { ContinuousClock.now - Self.origin }
    /// `Date()`.
    public func date() -> Date { Date() }
    /// `Task.sleep(for:)`: throws `CancellationError` when cancelled.
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
