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
}
