#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How long to wait before each retry: a fixed interval (STNetTaskQueue's
/// `retryInterval`) or exponential growth with a cap and optional full jitter.
///
/// ```swift
/// PocketBackoff.fixed(.seconds(5))                                   // 5 s, 5 s, 5 s …
/// PocketBackoff.exponential(initial: .milliseconds(100), cap: .seconds(10)) // random in 0…100 ms, 0…200 ms, …
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

/// Parsing of the `Retry-After` field (RFC 9110 §10.2.3): either a number of
/// seconds or an HTTP-date.
enum RetryAfter {
    /// The wait `value` asks for, measured from `now`; nil when it is neither
    /// form. A date in the past means zero.
    static func delay(_ value: String, now: Date) -> Duration? {
        let trimmed = String(value.drop(while: { $0 == " " || $0 == "\t" }).reversed()
            .drop(while: { $0 == " " || $0 == "\t" }).reversed())
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Huge digit strings saturate rather than failing.
            guard let seconds = Int64(trimmed) else { return .seconds(Int64.max / 1_000_000_000_000) }
            return .seconds(seconds)
        }
        guard let date = httpDate(trimmed) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds <= 0 ? .zero : .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
    /// forms recipients must accept (RFC 9110 §5.6.7).
    static func httpDate(_ text: String) -> Date? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        if parts.count == 6, parts[5] == "GMT" {
            // IMF-fixdate: Sun 06 Nov 1994 08:49:37 GMT
            day = Int(parts[1]); month = monthIndex(parts[2]); year = Int(parts[3]); time = clock(parts[4])
        } else if parts.count == 4, parts[3] == "GMT" {
            // RFC 850: Sunday 06-Nov-94 08:49:37 GMT
            let dmy = parts[1].split(separator: "-").map(String.init)
            guard dmy.count == 3, let yy = Int(dmy[2]) else { return nil }
            day = Int(dmy[0]); month = monthIndex(dmy[1]); time = clock(parts[2])
            // Two-digit years: RFC 9110 says a year more than 50 years ahead is in the past century.
            year = yy < 100 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
        } else if parts.count == 5 {
            // asctime: Sun Nov 6 08:49:37 1994
            month = monthIndex(parts[1]); day = Int(parts[2]); time = clock(parts[3]); year = Int(parts[4])
        }
        // A day the month has (no 31 Feb), and a four-digit year (a longer one would overflow the day count).
        guard let day, let month, let year, let time, (1970...9999).contains(year),
              (1...CivilDate.daysIn(month: month, year: year)).contains(day) else { return nil }
        return date(year: year, month: month, day: day, hour: time[0], minute: time[1], second: time[2])
    }

    private static func monthIndex(_ s: String) -> Int? {
        months.firstIndex(of: s.lowercased()).map { $0 + 1 }
    }

    private static func clock(_ s: String) -> [Int]? {
        let hms = s.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (0...23).contains(hms[0]), (0...59).contains(hms[1]), (0...60).contains(hms[2]) else { return nil }
        return hms
    }

    /// Seconds since 1970 of a UTC civil date.
    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date {
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }
}

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
    static let origin = ContinuousClock.now

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
