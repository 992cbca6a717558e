#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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

/// One change of a task's state, as observers and `PocketClient.events()` see it.
public struct PocketTaskEvent: Sendable {
    /// Identifies the task; unique per client.
    public var taskID: UInt64
    /// The new state.
    public var state: PocketTaskState
    /// The request's method.
    public var method: PocketMethod
    /// The request's URL (before middleware adapted it).
    public var url: URL
    /// The endpoint key (see `PocketSendOptions.endpoint`).
    public var endpoint: String
    /// The attempt this event belongs to (0 while pending).
    public var attempt: Int
    /// The status of the response that finished an attempt, if one arrived.
    public var status: Int?
    /// The error that ended an attempt or the task, if any.
    public var error: (any Error)?
    /// For `.retrying`: how long until the next attempt.
    public var retryDelay: Duration?
}

/// A handler for a task's events, limited to some states.
public struct PocketTaskObserver: Sendable {
    /// The states reported; every state by default.
    public var states: Set<PocketTaskState>
    /// Called synchronously in the task that changed state: keep it short and
    /// never block (hand work to another task).
    public var handler: @Sendable (PocketTaskEvent) -> Void

    /// Observes `states` (all by default) with `handler`.
    public init(states: Set<PocketTaskState> = Set(PocketTaskState.allCases), _ handler: @escaping @Sendable (PocketTaskEvent) -> Void) {
        self.states = states
        self.handler = handler
    }
}

/// Identifies a registered endpoint observer, for removal.
public struct PocketObserverToken: Sendable, Hashable {
    let id: UInt64
}
