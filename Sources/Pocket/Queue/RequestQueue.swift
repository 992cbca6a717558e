/// A queue in front of a client that caps how many requests run at once,
/// globally and per host, and starts waiting requests by priority, then
/// in arrival order (STNetTaskQueue's `maxConcurrentTasksCount`).
///
/// ```swift
/// let queue = PocketRequestQueue(client: client, maxConcurrent: 8, maxConcurrentPerHost: 2)
/// let task = try queue.enqueue(request, priority: .high)
/// let response = try await task.response()
/// // or: let response = try await queue.send(request)
/// queue.cancelAll()
/// print(queue.metrics.pending, queue.metrics.maxWait)
/// ```
///
/// Requests take the client's request path (middleware, retries, events);
/// a retrying request keeps its slot. Waiting requests cost a small record
/// each and no task or connection, so 10,000 of them stay cheap. With
/// `maxPending`, a request beyond it is refused with `.queueFull`.
public final class PocketRequestQueue: Sendable {
    private struct HostLine {
        var running = 0
        /// FIFOs by priority, highest first.
        var lines: [(priority: PocketQueuePriority, fifo: FIFO<PocketQueuedTask>)] = []
    }

    private struct State {
        var hosts: [String: HostLine] = [:]
        var running = 0
        var sequence: UInt64 = 0
        var metrics = PocketQueueMetrics()
    }

    /// The client that sends the requests.
    public let client: PocketClient
    /// Requests running at once, at least 1.
    public let maxConcurrent: Int
    /// Requests running at once to one host (name and port), at least 1.
    public let maxConcurrentPerHost: Int
    /// The most pending requests; nil for no bound.
    public let maxPending: Int?
    private let state = Lock(State())

    /// - Parameters:
    ///   - client: the client that sends the queue's requests.
    ///   - maxConcurrent: requests running at once, 8 by default (a few
    ///     connections keep a server busy without flooding it).
    ///   - maxConcurrentPerHost: per host, 4 by default (browsers use 6; a
    ///     service sharing a host with others should be politer). Never above `maxConcurrent`.
    ///   - maxPending: waiting requests allowed, nil (unbounded) by default;
    ///     set it to shed load early with `.queueFull`.
    public init(client: PocketClient, maxConcurrent: Int = 8, maxConcurrentPerHost: Int = 4, maxPending: Int? = nil) {
        self.client = client
        self.maxConcurrent = max(1, maxConcurrent)
        self.maxConcurrentPerHost = max(1, min(maxConcurrentPerHost, maxConcurrent))
        self.maxPending = maxPending.map { max(0, $0) }
    }

    /// Queues `request`; it starts when a slot is free. Throws `.queueFull`
    /// when it would have to wait and `maxPending` requests already wait.
    @discardableResult
    public func enqueue(_ request: PocketRequest, priority: PocketQueuePriority = .normal, options: PocketSendOptions = PocketSendOptions(),
                        progress: PocketProgressHandler? = nil) throws -> PocketQueuedTask {
        let host = Self.hostKey(request)
        let now = client.configuration.handling.clock.uptime()
        let id = client.hub.newTaskID()
        let task: PocketQueuedTask = try state.withLock { s in
            if let maxPending, s.metrics.pending >= maxPending, !canStartNow(host: host, s) {
                s.metrics.rejected += 1
                throw PocketError(.queueFull, "the request queue already holds \(maxPending) pending requests (maxPending)")
            }
            s.sequence += 1
            let task = PocketQueuedTask(id: id, request: request, priority: priority, sequence: s.sequence, host: host,
                                  enqueuedAt: now, options: options, progress: progress, queue: self)
            var line = s.hosts[host] ?? HostLine()
            if let i = line.lines.firstIndex(where: { $0.priority == priority }) {
                line.lines[i].fifo.push(task)
            } else {
                var fifo = FIFO<PocketQueuedTask>()
                fifo.push(task)
                let at = line.lines.firstIndex(where: { $0.priority < priority }) ?? line.lines.endIndex
                line.lines.insert((priority, fifo), at: at)
            }
            s.hosts[host] = line
            s.metrics.enqueued += 1
            s.metrics.pending += 1
            s.metrics.peakPending = max(s.metrics.peakPending, s.metrics.pending)
            return task
        }
        sink(for: task).emit(.pending, attempt: 0)
        task.markAnnounced()
        pump()
        return task
    }

    /// Queues `request` and waits for its response. Cancelling the calling
    /// task cancels the request (pending: never sent; running: its connection closed).
    public func send(_ request: PocketRequest, priority: PocketQueuePriority = .normal, options: PocketSendOptions = PocketSendOptions(),
                     progress: PocketProgressHandler? = nil) async throws -> PocketResponse {
        let task = try enqueue(request, priority: priority, options: options, progress: progress)
        return try await withTaskCancellationHandler {
            try await task.response()
        } onCancel: {
            task.cancel()
        }
    }

    /// Cancels every pending and running request of this queue.
    public func cancelAll() {
        let pending = state.withLock { s -> [PocketQueuedTask] in
            var pending: [PocketQueuedTask] = []
            for key in s.hosts.keys {
                for i in s.hosts[key]!.lines.indices {
                    while let t = s.hosts[key]!.lines[i].fifo.pop() { pending.append(t) }
                }
                s.hosts[key]!.lines = []
            }
            return pending
        }
        for task in pending { task.cancel() }
        for task in running.withLock({ Array($0.values) }) { task.cancel() }
    }

    /// Whether a request for `host` would start at once (a free slot, and
    /// nothing of that host waiting before it): such a request never waits,
    /// so `maxPending` does not refuse it.
    private func canStartNow(host: String, _ s: State) -> Bool {
        guard s.running < maxConcurrent else { return false }
        guard let line = s.hosts[host] else { return true }
        return line.running < maxConcurrentPerHost && line.lines.allSatisfy { $0.fifo.isEmpty }
    }

    /// The queue's counters now.
    public var metrics: PocketQueueMetrics { state.withLock { $0.metrics } }

    // MARK: Internals

    /// Running tasks by id, for `cancelAll`.
    private let running = Lock([UInt64: PocketQueuedTask]())

    static func hostKey(_ request: PocketRequest) -> String {
        let target = request.target
        if let path = target.unixPath ?? request.unixSocketPath { return "unix:\(path)" }
        return "\(target.host.lowercased()):\(target.port)"
    }

    private func sink(for task: PocketQueuedTask) -> EventSink {
        EventSink(hub: client.hub, taskID: task.id, method: task.method, url: task.url,
                  endpoint: .named(task.endpoint), observers: [], task: task, metadata: task.metadata)
    }

    /// A pending task was cancelled: it no longer counts (its record is
    /// skipped when it reaches the head of its line).
    func pendingCancelled(_ task: PocketQueuedTask, error: PocketError) {
        state.withLock { s in
            s.metrics.pending -= 1
            s.metrics.cancelled += 1
        }
        sink(for: task).emit(.cancelled, attempt: 0, error: error)
        pump()
    }

    /// Starts as many waiting requests as the caps allow.
    private func pump() {
        while let (task, request) = next() {
            let runner = Task { [client] in
                let sink = self.sink(for: task)
                let result: Result<PocketResponse, any Error>
                do {
                    result = .success(try await client.send(request, options: task.options,
                                                            progress: task.progress, sink: sink))
                } catch {
                    result = .failure(error)
                }
                self.finished(task, result)
            }
            task.attach(runner)
        }
    }

    /// Takes the best startable task (highest priority, then oldest, on a
    /// host under its cap), or nil.
    private func next() -> (PocketQueuedTask, PocketRequest)? {
        let now = client.configuration.handling.clock.uptime()
        return state.withLock { s -> (PocketQueuedTask, PocketRequest)? in
            while s.running < maxConcurrent {
                var best: (host: String, line: Int, task: PocketQueuedTask)?
                for (host, var line) in s.hosts where line.running < maxConcurrentPerHost {
                    // Drop cancelled records at the heads.
                    var changed = false
                    for i in line.lines.indices {
                        while let head = line.lines[i].fifo.first, head.currentState == .cancelled {
                            _ = line.lines[i].fifo.pop()
                            changed = true
                        }
                    }
                    if changed {
                        line.lines.removeAll { $0.fifo.isEmpty }
                        s.hosts[host] = line.lines.isEmpty && line.running == 0 ? nil : line
                    }
                    // A head not yet announced holds its host's line until
                    // its `enqueue` reports `.pending` and pumps.
                    guard let i = line.lines.firstIndex(where: { !$0.fifo.isEmpty }), let head = line.lines[i].fifo.first,
                          head.isAnnounced
                    else { continue }
                    if best == nil || head.priority > best!.task.priority
                        || (head.priority == best!.task.priority && head.sequence < best!.task.sequence) {
                        best = (host, i, head)
                    }
                }
                guard let best else { return nil }
                _ = s.hosts[best.host]!.lines[best.line].fifo.pop()
                if s.hosts[best.host]!.lines[best.line].fifo.isEmpty { s.hosts[best.host]!.lines.remove(at: best.line) }
                // Cancelled just now: `pendingCancelled` does the accounting.
                guard let request = best.task.takeForRunning() else { continue }
                s.metrics.pending -= 1
                s.hosts[best.host]!.running += 1
                s.running += 1
                s.metrics.running = s.running
                s.metrics.peakRunning = max(s.metrics.peakRunning, s.running)
                s.metrics.started += 1
                let wait = max(.zero, now - best.task.enqueuedAt)
                s.metrics.totalWait += wait
                s.metrics.maxWait = max(s.metrics.maxWait, wait)
                running.withLock { $0[best.task.id] = best.task }
                return (best.task, request)
            }
            return nil
        }
    }

    private func finished(_ task: PocketQueuedTask, _ result: Result<PocketResponse, any Error>) {
        state.withLock { s in
            s.running -= 1
            s.metrics.running = s.running
            if PocketClient.isCancellation(result) { s.metrics.cancelled += 1 } else { s.metrics.completed += 1 }
            if var line = s.hosts[task.host] {
                line.running -= 1
                s.hosts[task.host] = line.running == 0 && line.lines.isEmpty ? nil : line
            }
        }
        running.withLock { $0[task.id] = nil }
        task.complete(result)
        pump()
    }
}

/// Where a request goes in a `PocketRequestQueue`: a higher priority starts
/// first; equal priorities start in the order queued (FIFO).
public struct PocketQueuePriority: RawRepresentable, Comparable, Hashable, Sendable {
    /// Higher starts first.
    public let rawValue: Int
    /// A priority of your own between (or beyond) the named ones.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Below `.normal`: background work.
    public static let low = PocketQueuePriority(rawValue: -100)
    /// The default.
    public static let normal = PocketQueuePriority(rawValue: 0)
    /// Above `.normal`: what a user waits for.
    public static let high = PocketQueuePriority(rawValue: 100)

    /// Orders by `rawValue`.
    public static func < (a: PocketQueuePriority, b: PocketQueuePriority) -> Bool { a.rawValue < b.rawValue }
}

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

/// A first-in first-out buffer: amortised O(1) push and pop, storage
/// reclaimed as the head advances (so a drained queue holds no memory).
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    mutating func push(_ item: Element) { items.append(item) }

    var first: Element? { isEmpty ? nil : items[head] }

    mutating func pop() -> Element? {
        guard !isEmpty else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 64)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
