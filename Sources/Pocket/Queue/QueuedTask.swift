#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One request in a `PocketRequestQueue`: observe it, wait for it, cancel it.
///
/// ```swift
/// let task = try queue.enqueue(request, priority: .high)
/// task.observe(states: [.retrying]) { print("retrying", $0.attempt) }
/// let response = try await task.response()
/// ```
public final class PocketQueuedTask: Sendable {
    enum Phase { case pending, running, finished, cancelled }

    struct State {
        var phase = Phase.pending
        var request: PocketRequest?
        var result: Result<PocketResponse, any Error>?
        var waiters: [CheckedContinuation<PocketResponse, any Error>] = []
        var runner: Task<Void, Never>?
        var cancelRequested = false
        /// `.pending` has been reported: the task may start (so no observer
        /// sees `.running` before `.pending`).
        var announced = false
        var observers: [PocketTaskObserver]
    }

    /// The task's id, as in its `PocketTaskEvent`s.
    public let id: UInt64
    /// The request's `metadata`, readable while the task waits or runs.
    public let metadata: (any Sendable)?
    /// The queue position key: priority first, then arrival.
    let priority: PocketQueuePriority
    let sequence: UInt64
    let host: String
    let enqueuedAt: Duration
    let options: PocketSendOptions
    let method: PocketMethod
    let url: URL
    let endpoint: String
    let progress: PocketProgressHandler?
    let state: Lock<State>
    weak let queue: PocketRequestQueue?

    init(id: UInt64, request: PocketRequest, priority: PocketQueuePriority, sequence: UInt64, host: String, enqueuedAt: Duration,
         options: PocketSendOptions, progress: PocketProgressHandler?, queue: PocketRequestQueue) {
        self.id = id
        self.priority = priority
        self.sequence = sequence
        self.host = host
        self.enqueuedAt = enqueuedAt
        self.options = options
        self.method = request.method
        self.url = request.url
        self.metadata = request.metadata
        self.endpoint = options.endpoint ?? request.endpointPath
        self.progress = progress
        self.queue = queue
        self.state = Lock(State(request: request, observers: options.observers))
    }

    /// Where the task is now: `.pending`, `.running` (retries included),
    /// `.finished` or `.cancelled`.
    public var currentState: PocketTaskState {
        switch state.withLock({ $0.phase }) {
        case .pending: return .pending
        case .running: return .running
        case .finished: return .finished
        case .cancelled: return .cancelled
        }
    }

    /// Adds an observer of this task's later events (several may be added).
    public func observe(states: Set<PocketTaskState> = Set(PocketTaskState.allCases), _ handler: @escaping @Sendable (PocketTaskEvent) -> Void) {
        state.withLock { $0.observers.append(PocketTaskObserver(states: states, handler)) }
    }

    var observers: [PocketTaskObserver] { state.withLock { $0.observers } }

    /// Waits for the outcome: the response, or the error (`.cancelled` after
    /// `cancel()`). Any number of callers may wait. Cancelling a waiting
    /// caller does not cancel the task (others may be waiting): call `cancel()`.
    public func response() async throws -> PocketResponse {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<PocketResponse, any Error>? = state.withLock { s in
                if let r = s.result { return r }
                s.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }

    /// Cancels the task: a pending one is never sent; a running one has its
    /// request cancelled (its connection closed). A finished task is left
    /// as it is. Waiters get `.cancelled`.
    public func cancel() {
        enum Action { case none, dequeued, cancelRunner(Task<Void, Never>?) }
        let action: Action = state.withLock { s in
            switch s.phase {
            case .pending:
                s.phase = .cancelled
                s.request = nil
                return .dequeued
            case .running:
                s.cancelRequested = true
                return .cancelRunner(s.runner)
            case .finished, .cancelled:
                return .none
            }
        }
        switch action {
        case .none: break
        case .dequeued:
            let error = PocketError(.cancelled, "the queued request was cancelled before it was sent")
            queue?.pendingCancelled(self, error: error)
            complete(.failure(error))
        case .cancelRunner(let runner):
            runner?.cancel()
        }
    }

    var isAnnounced: Bool { state.withLock { $0.announced } }

    func markAnnounced() { state.withLock { $0.announced = true } }

    /// Moves a pending task to running; returns its request, or nil if it
    /// was cancelled meanwhile.
    func takeForRunning() -> PocketRequest? {
        state.withLock { s in
            guard s.phase == .pending, let request = s.request else { return nil }
            s.phase = .running
            s.request = nil
            return request
        }
    }

    func attach(_ runner: Task<Void, Never>) {
        let cancelNow = state.withLock { s in
            s.runner = runner
            return s.cancelRequested
        }
        if cancelNow { runner.cancel() }
    }

    /// Records the outcome and resumes every waiter.
    func complete(_ result: Result<PocketResponse, any Error>) {
        let waiters = state.withLock { s -> [CheckedContinuation<PocketResponse, any Error>] in
            guard s.result == nil else { return [] }
            s.result = result
            if s.phase == .running || s.phase == .pending {
                s.phase = PocketClient.isCancellation(result) ? .cancelled : .finished
            }
            s.runner = nil
            let w = s.waiters
            s.waiters = []
            return w
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
