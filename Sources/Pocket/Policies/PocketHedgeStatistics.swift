/// What a client's hedging did since it started (`PocketClient.hedgeStatistics`):
/// the extra load it added and what that bought.
public struct PocketHedgeStatistics: Sendable, Hashable {
    /// Hedges sent (each also reported as a `.hedging` event).
    public var sent: Int
    /// Hedges whose answer was the request's (each also a `.hedgeWon`).
    public var won: Int

    /// Counts, e.g. to compare with a client's.
    public init(sent: Int = 0, won: Int = 0) {
        self.sent = sent
        self.won = won
    }
}
