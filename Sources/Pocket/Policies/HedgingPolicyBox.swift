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

    init(_ policy: PocketHedgingPolicy) {
        self.policy = policy
        nonFatal = policy.nonFatalStatuses.sorted()
    }
}
