/// The arithmetic of a budget of extra requests (`PocketRetryBudget`, the
/// hedging budget): a sliding window of ten buckets of requests and of
/// extra requests spent, on a clock of nanoseconds the caller passes (so
/// that it runs, and is tested, without a real clock).
///
/// Requests are a counter the caller increments on its own (one atomic add
/// per request, with no clock read); the window places the requests it has
/// not seen yet when it is next consulted, spread evenly over the time since
/// then: a steady rate lands where it happened, and a request never counts
/// for longer than the window.
struct BudgetWindow: Sendable {
    static let buckets = 10
    /// Extra requests allowed per request.
    let share: Double
    /// Extra requests allowed per window whatever the traffic.
    let reserve: Double
    /// Nanoseconds per bucket.
    let width: Int64
    private var requests = [Double](repeating: 0, count: BudgetWindow.buckets)
    private var spent = [Double](repeating: 0, count: BudgetWindow.buckets)
    /// The index (time / width) of the newest bucket.
    private var newest: Int64
    /// When requests were last placed.
    private var placed: Int64
    /// The request counter's value when requests were last placed.
    private var seen: UInt64 = 0

    /// `percent` of the requests plus `perSecond` a second over `window`,
    /// from `now`.
    init(percent: Double, perSecond: Double, window: Duration, now: Int64) {
        let nanos = Self.nanoseconds(window)
        share = percent / 100
        reserve = perSecond * Double(nanos) / 1e9
        width = max(1, nanos / Int64(Self.buckets))
        newest = now / width
        placed = now
    }

    /// Takes one extra request from the budget when it has one.
    mutating func withdraw(now: Int64, requests counter: UInt64) -> Bool {
        advance(to: now, requests: counter)
        guard spentTotal + 1 <= allowance else { return false }
        spent[slot(newest)] += 1
        return true
    }

    /// Counts an extra request that was made whatever the budget said.
    mutating func charge(now: Int64, requests counter: UInt64) {
        advance(to: now, requests: counter)
        spent[slot(newest)] += 1
    }

    /// The extra requests the window allows now: the reserve plus the share
    /// of its requests.
    var allowance: Double { reserve + share * requests.reduce(0, +) }
    /// The extra requests spent in the window.
    var spentTotal: Double { spent.reduce(0, +) }

    /// Moves the window to `now` (buckets that fell out are emptied) and
    /// places the requests counted since the last call.
    /// Callers read the clock and the request counter before they take the
    /// budget's lock, so a caller that lost the race brings an older time
    /// and a smaller count than the window has seen: neither moves it back.
    mutating func advance(to now: Int64, requests counter: UInt64) {
        let now = max(now, placed)
        let index = now / width
        if index > newest {
            for i in 1...min(index - newest, Int64(Self.buckets)) {
                requests[slot(newest + i)] = 0
                spent[slot(newest + i)] = 0
            }
            newest = index
        }
        let fresh = counter > seen ? Double(counter - seen) : 0
        seen = max(seen, counter)
        guard fresh > 0 else {
            placed = max(placed, now)
            return
        }
        let span = now - placed
        if span <= 0 || placed / width == index {
            requests[slot(index)] += fresh
        } else {
            // Spread over [placed, now], of which only the window's part stays.
            let from = max(placed, (index - Int64(Self.buckets) + 1) * width)
            for b in (from / width)...index {
                let overlap = min(now, (b + 1) * width) - max(from, b * width)
                if overlap > 0 { requests[slot(b)] += fresh * Double(overlap) / Double(span) }
            }
        }
        placed = now
    }

    private func slot(_ index: Int64) -> Int { Int(index % Int64(Self.buckets)) }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
