/// A hedging policy held by reference, as the request path carries it: a
/// `PocketHedgingPolicy` is about a hundred bytes with a set inside, and an
/// optional of it copied into each attempt's async frame and destroyed
/// again costs every request (most of which have none) two outlined value
/// witness calls; a reference costs a nil check.
final class HedgingPolicyBox: Sendable {
    let policy: PocketHedgingPolicy

    init(_ policy: PocketHedgingPolicy) { self.policy = policy }
}
