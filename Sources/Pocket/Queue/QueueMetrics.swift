/// A snapshot of a `PocketRequestQueue`'s counters.
public struct PocketQueueMetrics: Sendable, Hashable {
    /// Requests waiting now (the queue depth).
    public var pending = 0
    /// Requests running now.
    public var running = 0
    /// The most requests ever waiting at once.
    public var peakPending = 0
    /// The most requests ever running at once.
    public var peakRunning = 0
    /// Requests accepted since the queue was made.
    public var enqueued = 0
    /// Requests that ran to an outcome (a response or an error).
    public var completed = 0
    /// Requests cancelled, pending or running.
    public var cancelled = 0
    /// Requests refused with `.queueFull`.
    public var rejected = 0
    /// Requests that left the queue to run.
    public var started = 0
    /// Time from enqueue to start, summed over started requests.
    public var totalWait: Duration = .zero
    /// The longest time a started request waited.
    public var maxWait: Duration = .zero

    /// `totalWait / started`, zero before any start.
    public var averageWait: Duration { started == 0 ? .zero : totalWait / started }
}
