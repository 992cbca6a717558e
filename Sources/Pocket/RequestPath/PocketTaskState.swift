/// Where a task (one request through a client's pipeline or queue) is.
public enum PocketTaskState: Sendable, Hashable, CaseIterable {
    /// Waiting in a `PocketRequestQueue` for a free slot.
    case pending
    /// An attempt is being made.
    case running
    /// An attempt failed and another will be made after `PocketTaskEvent.retryDelay`.
    case retrying
    /// Done: with a response (`PocketTaskEvent.status`) or an error (`PocketTaskEvent.error`).
    case finished
    /// Cancelled before it finished (pending tasks are never sent).
    case cancelled
    /// An attempt failed and would have been retried, but the client's retry
    /// budget (`PocketRetryBudget`) is spent: `.finished` follows with the
    /// failure as it is.
    case retryRefused
    /// A hedge of the current attempt was sent (`PocketTaskEvent.hedge` is
    /// its number, 1 for the first): the first answer had not come within
    /// the hedging delay (`PocketHedgingPolicy`).
    case hedging
    /// A hedge's response won the race (`PocketTaskEvent.hedge` is its
    /// number); the others were cancelled.
    case hedgeWon
}
