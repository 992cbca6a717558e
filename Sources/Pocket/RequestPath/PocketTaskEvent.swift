#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One change of a task's state, as observers and `PocketClient.events()` see it.
public struct PocketTaskEvent: Sendable {
    // What every event of a task shares is made once per task and
    // referenced (an event is copied into each subscriber's buffer and out
    // again: one retain, not one per field): the task's middleware context,
    // which the request path makes anyway.
    private var task: PocketMiddlewareContext

    /// Identifies the task; unique per client.
    public var taskID: UInt64 {
        get { task.fields.taskID }
        set { task = task.with { $0.taskID = newValue } }
    }
    /// The new state.
    public var state: PocketTaskState
    /// The request's method.
    public var method: PocketMethod {
        get { task.fields.method }
        set { task = task.with { $0.method = newValue } }
    }
    /// The request's URL (before middleware adapted it).
    public var url: URL {
        get { task.fields.url }
        set { task = task.with { $0.url = newValue } }
    }
    /// The endpoint key (see `PocketSendOptions.endpoint`).
    public var endpoint: String {
        get { task.fields.endpointValue }
        set { task = task.with { $0.endpoint = .named(newValue) } }
    }
    /// The attempt this event belongs to (0 while pending).
    public var attempt: Int
    /// The status of the response that finished an attempt, if one arrived.
    public var status: Int?
    /// The error that ended an attempt or the task, if any.
    public var error: (any Error)?
    /// For `.retrying`: how long until the next attempt.
    public var retryDelay: Duration?
    /// For `.hedging`, the hedge sent (1 for the first); for `.hedgeWon`,
    /// the hedge whose response won; nil otherwise.
    public var hedge: Int?
    /// The request's `metadata` (the caller's value: which operation this
    /// task belongs to), or nil.
    public var metadata: (any Sendable)? {
        get { task.fields.metadata }
        set { task = task.with { $0.metadata = newValue } }
    }

    init(task: PocketMiddlewareContext, state: PocketTaskState, attempt: Int, status: Int?, error: (any Error)?, retryDelay: Duration?,
         hedge: Int? = nil) {
        self.task = task
        self.hedge = hedge
        self.state = state
        self.attempt = attempt
        self.status = status
        self.error = error
        self.retryDelay = retryDelay
    }
}
