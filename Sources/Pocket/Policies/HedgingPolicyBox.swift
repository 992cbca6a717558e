/// A hedging policy held by reference, as the request path carries it: a
/// `PocketHedgingPolicy` is about a hundred bytes with a set inside, and an
/// optional of it copied into each attempt's async frame and destroyed
/// again costs every request (most of which have none) two outlined value
/// witness calls; a reference costs a nil check.
final class HedgingPolicyBox: Sendable {
    let policy: PocketHedgingPolicy
    /// `policy.nonFatalStatuses` as a short array: a hedged request's answer
    /// is checked against it, and a linear look at a few integers costs
    /// less than hashing one.
    let nonFatal: [Int]
    /// `policy.maxHedges`, read without a copy of the policy.
    let maxHedges: Int
    /// A fixed delay in nanoseconds; nil for a percentile one.
    let fixedDelayNanos: Int64?

    init(_ policy: PocketHedgingPolicy) {
        self.policy = policy
        nonFatal = policy.nonFatalStatuses.sorted()
        maxHedges = policy.maxHedges
        if case .fixed(let delay) = policy.delay { fixedDelayNanos = delay.nanoseconds } else { fixedDelayNanos = nil }
    }
}
