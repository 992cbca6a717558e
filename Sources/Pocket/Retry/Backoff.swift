/// How long to wait before each retry: a fixed interval (STNetTaskQueue's
/// `retryInterval`) or exponential growth with a cap and optional full jitter.
///
/// ```swift
/// Backoff.fixed(.seconds(5))                                   // 5 s, 5 s, 5 s …
/// Backoff.exponential(initial: .milliseconds(100), cap: .seconds(10)) // random in 0…100 ms, 0…200 ms, …
/// ```
///
/// Full jitter (a uniform delay between zero and the exponential ceiling) is
/// the default for exponential backoff: it spreads the retries of many
/// clients that failed together, so they do not hit a recovering server in
/// lockstep.
public struct PocketBackoff: Sendable, Hashable {
    /// Whether a delay is the ceiling itself or a random point below it.
    public enum Jitter: Sendable, Hashable {
        /// Exactly the ceiling: a predictable schedule.
        case none
        /// Uniform in `0...ceiling` ("full jitter").
        case full
    }

    /// The delay before the first retry (its ceiling, with jitter).
    public var initial: Duration
    /// Growth factor per retry; 1 gives a fixed interval.
    public var multiplier: Double
    /// No delay exceeds this.
    public var cap: Duration
    /// See `Jitter`.
    public var jitter: Jitter

    /// A schedule; negative durations count as zero and a multiplier below 1 as 1.
    public init(initial: Duration, multiplier: Double, cap: Duration, jitter: Jitter) {
        self.initial = max(.zero, initial)
        self.multiplier = max(1, multiplier)
        self.cap = max(.zero, cap)
        self.jitter = jitter
    }

    /// The same `interval` before every retry, no jitter.
    public static func fixed(_ interval: Duration) -> PocketBackoff {
        PocketBackoff(initial: interval, multiplier: 1, cap: interval, jitter: .none)
    }

    /// `initial × multiplier^(n-1)` before retry `n`, at most `cap`; full
    /// jitter unless told otherwise. Defaults: 100 ms doubling to 10 s.
    public static func exponential(initial: Duration = .milliseconds(100), multiplier: Double = 2,
                                   cap: Duration = .seconds(10), jitter: Jitter = .full) -> PocketBackoff {
        PocketBackoff(initial: initial, multiplier: multiplier, cap: cap, jitter: jitter)
    }

    /// The largest delay before retry `retry` (1 for the first retry).
    public func ceiling(forRetry retry: Int) -> Duration {
        let capSeconds = Self.seconds(cap)
        var value = Self.seconds(initial)
        var n = 1
        while n < retry, value < capSeconds {
            value *= multiplier
            n += 1
        }
        return Self.duration(min(value, capSeconds))
    }

    /// The delay before retry `retry`, drawing jitter from `generator`.
    public func delay<G: RandomNumberGenerator>(forRetry retry: Int, using generator: inout G) -> Duration {
        let ceiling = ceiling(forRetry: retry)
        switch jitter {
        case .none:
            return ceiling
        case .full:
            let seconds = Self.seconds(ceiling)
            guard seconds > 0 else { return .zero }
            return Self.duration(Double.random(in: 0...seconds, using: &generator))
        }
    }

    /// The delay before retry `retry`, with the system's random generator.
    public func delay(forRetry retry: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(forRetry: retry, using: &generator)
    }

    static func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) / 1e18
    }

    static func duration(_ seconds: Double) -> Duration {
        .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
