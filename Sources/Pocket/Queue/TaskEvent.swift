#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a task (one request through a client's pipeline or queue) is.
public enum TaskState: Sendable, Hashable, CaseIterable {
    /// Waiting in a `RequestQueue` for a free slot.
    case pending
    /// An attempt is being made.
    case running
    /// An attempt failed and another will be made after `TaskEvent.retryDelay`.
    case retrying
    /// Done: with a response (`TaskEvent.status`) or an error (`TaskEvent.error`).
    case finished
    /// Cancelled before it finished (pending tasks are never sent).
    case cancelled
}

/// One change of a task's state, as observers and `PocketClient.events()` see it.
public struct TaskEvent: Sendable {
    /// Identifies the task; unique per client.
    public var taskID: UInt64
    /// The new state.
    public var state: TaskState
    /// The request's method.
    public var method: HTTPMethod
    /// The request's URL (before middleware adapted it).
    public var url: URL
    /// The endpoint key (see `SendOptions.endpoint`).
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
public struct TaskObserver: Sendable {
    /// The states reported; every state by default.
    public var states: Set<TaskState>
    /// Called synchronously in the task that changed state: keep it short and
    /// never block (hand work to another task).
    public var handler: @Sendable (TaskEvent) -> Void

    /// Observes `states` (all by default) with `handler`.
    public init(states: Set<TaskState> = Set(TaskState.allCases), _ handler: @escaping @Sendable (TaskEvent) -> Void) {
        self.states = states
        self.handler = handler
    }
}

/// Identifies a registered endpoint observer, for removal.
public struct ObserverToken: Sendable, Hashable {
    let id: UInt64
}
