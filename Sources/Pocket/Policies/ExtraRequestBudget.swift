import Synchronization

/// A client's budgets of extra requests, in one place: retries (the retry
/// policy's and any middleware's, `PocketRetryBudget`), the engine's one
/// resend after a stale pooled connection (counted: it happens in the
/// engine and cannot be refused) and hedges (their own share).
///
/// Each request costs one relaxed atomic add (`deposit`); the windows are
/// consulted, under a lock, only when an extra request is about to be made.
/// It also counts the hedges sent and won (`PocketClient.hedgeStatistics`):
/// an add when one is, nothing per request.
final class ExtraRequestBudget: Sendable {
    private let requests = Atomic<UInt64>(0)
    private let hedgesSent = Atomic<Int>(0)
    private let hedgesWon = Atomic<Int>(0)
    private let origin = ContinuousClock.now
    private let windows: Lock<Windows>

    struct Windows {
        var retries: BudgetWindow?
        var hedges: BudgetWindow?
    }

    /// Budgets for retries (nil: unlimited) and hedges (the client's hedging
    /// policy's, or a default policy's without one).
    init(retries: PocketRetryBudget?, hedges: PocketHedgingPolicy?, hedgeWindow: Duration = .seconds(10)) {
        let hedges = hedges ?? PocketHedgingPolicy(delay: .fixed(.zero))
        windows = Lock(Windows(
            retries: retries.map { BudgetWindow(percent: $0.percent, perSecond: $0.minimumPerSecond, window: $0.window, now: 0) },
            hedges: BudgetWindow(percent: hedges.budgetPercent, perSecond: hedges.budgetMinimumPerSecond, window: hedgeWindow, now: 0)))
    }

    /// Counts one request.
    @inline(__always)
    func deposit() {
        requests.add(1, ordering: .relaxed)
    }

    /// Whether a retry may be made now (then it is counted).
    func permitsRetry() -> Bool {
        let (now, count) = reading()
        return windows.withLock { $0.retries?.withdraw(now: now, requests: count) ?? true }
    }

    /// Whether a hedge may be sent now (then it is counted, and sent).
    func permitsHedge() -> Bool {
        let (now, count) = reading()
        let permitted = windows.withLock { $0.hedges?.withdraw(now: now, requests: count) ?? true }
        if permitted { hedgesSent.add(1, ordering: .relaxed) }
        return permitted
    }

    /// Counts a hedge whose answer was its request's.
    func countHedgeWon() {
        hedgesWon.add(1, ordering: .relaxed)
    }

    /// The hedges sent and won so far.
    var hedgeStatistics: PocketHedgeStatistics {
        PocketHedgeStatistics(sent: hedgesSent.load(ordering: .relaxed), won: hedgesWon.load(ordering: .relaxed))
    }

    /// Counts the engine's resend of a request after a stale connection.
    func chargeResend() {
        let (now, count) = reading()
        windows.withLock { $0.retries?.charge(now: now, requests: count) }
    }

    private func reading() -> (Int64, UInt64) {
        (BudgetWindow.nanoseconds(.now - origin), requests.load(ordering: .relaxed))
    }
}
