/// How many extra requests a client may send on top of those it is asked
/// to send, as Finagle's retry budgets do: retries (and, with its own
/// share, hedges) at most `percent` of the requests sent over the last
/// `window`, plus a floor of `minimumPerSecond`, so that a client whose
/// servers all fail never multiplies their load.
///
/// A request that would be retried when the budget is spent is not: its
/// failure is returned as it is (a `PocketError` then has
/// `retryBudgetSpent` set) and `.retryRefused` is reported to its events.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.retry = PocketRetryPolicy(maxAttempts: 5)
/// config.handling.retryBudget = PocketRetryBudget(percent: 10, minimumPerSecond: 5)
/// ```
///
/// On by default (`PocketRetryBudget.default`: 20 % plus 10 a second over
/// 10 s), shared by every request of the client. The retry policy, a
/// middleware's retries and the engine's one resend after a stale pooled
/// connection all draw on it (the engine's resend cannot be refused: it is
/// counted).
public struct PocketRetryBudget: Sendable, Hashable {
    /// Retries at most this share of the requests over `window`, in percent
    /// (20 by default, Finagle's figure).
    public var percent: Double
    /// Retries allowed each second whatever the traffic (10 by default), so
    /// that a client sending few requests can still retry them.
    public var minimumPerSecond: Double
    /// How far back requests and retries count (10 s by default).
    public var window: Duration

    /// A budget; each parameter defaults as its property says. A negative
    /// share or floor counts as zero; a window under 10 ms as 10 ms.
    public init(percent: Double = 20, minimumPerSecond: Double = 10, window: Duration = .seconds(10)) {
        self.percent = max(0, percent)
        self.minimumPerSecond = max(0, minimumPerSecond)
        self.window = max(window, .milliseconds(10))
    }

    /// 20 % of the requests plus 10 a second, over 10 s.
    public static let `default` = PocketRetryBudget()
}
