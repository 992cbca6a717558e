/// Hedged requests ("The Tail at Scale", Dean and Barroso): when the answer
/// to an idempotent request has not come within a delay, the same request
/// is sent again, concurrently, on another connection (another replica when
/// the request addresses a set), and the first acceptable answer wins. The
/// others are cancelled and their connections closed, never returned to the
/// pool half-read.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.hedging = PocketHedgingPolicy(delay: .percentile(95))
/// ```
///
/// Only idempotent requests are hedged (`PocketRequest.isIdempotent`, the
/// rule every resend follows) whose body can be sent again, and only when
/// the response is collected (`send`): a streamed body or a download is
/// never raced. Hedges draw on the client's hedging budget (`budgetPercent`
/// of its requests): with it spent, no hedge is sent. Each hedge is
/// reported as `.hedging`, a hedge's win as `.hedgeWon`.
///
/// Off by default (`Configuration.handling.hedging` is nil): hedging adds
/// load, so it is the caller's choice. A request can set its own
/// (`PocketSendOptions.hedging`).
public struct PocketHedgingPolicy: Sendable, Hashable {
    /// When a hedge is sent.
    public enum Delay: Sendable, Hashable {
        /// This long after the request (and after the previous hedge).
        case fixed(Duration)
        /// The given percentile (`95` for p95) of the recent latencies of
        /// hedged requests to the same origin (`latencySamples` of them);
        /// no hedge until 20 have been seen.
        case percentile(Double)
    }

    /// When to send a hedge.
    public var delay: Delay
    /// Hedges per request at most: 1 by default (one extra request, the
    /// case the tail-at-scale figures are for).
    public var maxHedges: Int
    /// The client's hedging budget: hedges at most this share of its
    /// requests over 10 s, in percent; 5 by default. Set on the client's
    /// policy (a request's own policy draws on the client's budget; a client
    /// without a policy has the default).
    public var budgetPercent: Double
    /// Hedges the client's budget allows each second whatever the traffic
    /// (1 by default), so that a client sending few requests can still hedge.
    /// Set on the client's policy, as `budgetPercent`.
    public var budgetMinimumPerSecond: Double
    /// Statuses that do not end the race (the request, or a hedge, answered
    /// with one of them leaves the others running, and the next hedge is sent
    /// at once): 500, 502, 503 and 504 by default, as gRPC's non-fatal
    /// statuses. Any other response, or one that passes the request's
    /// `PocketValidation`, wins.
    public var nonFatalStatuses: Set<Int>
    /// Recent latencies kept per origin for a percentile delay: 200 by default.
    public var latencySamples: Int
    /// The shortest percentile delay, 1 ms by default: a hedge sooner than
    /// that would double the load of a fast origin for nothing.
    public var minimumDelay: Duration

    /// A policy; each parameter defaults as its property says.
    public init(delay: Delay, maxHedges: Int = 1, budgetPercent: Double = PocketHedgingPolicy.defaultBudgetPercent,
                budgetMinimumPerSecond: Double = 1, nonFatalStatuses: Set<Int> = [500, 502, 503, 504], latencySamples: Int = 200,
                minimumDelay: Duration = .milliseconds(1)) {
        self.delay = delay
        self.maxHedges = max(0, maxHedges)
        self.budgetPercent = max(0, budgetPercent)
        self.budgetMinimumPerSecond = max(0, budgetMinimumPerSecond)
        self.nonFatalStatuses = nonFatalStatuses
        self.latencySamples = max(20, latencySamples)
        self.minimumDelay = minimumDelay
    }

    /// A hedge `delay` after the request.
    public static func after(_ delay: Duration, maxHedges: Int = 1) -> PocketHedgingPolicy {
        PocketHedgingPolicy(delay: .fixed(delay), maxHedges: maxHedges)
    }

    /// The hedging budget of a client without a policy: 5 % of its requests.
    public static let defaultBudgetPercent: Double = 5
}
