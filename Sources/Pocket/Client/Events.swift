#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

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
    /// The request's `metadata` (the caller's value: which operation this
    /// task belongs to), or nil.
    public var metadata: (any Sendable)?
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

/// A client's listeners: `events()` subscribers and observers by endpoint.
/// One per client (shared with its scoped clients), made at init.
/// `listenerCount` lets a request skip making events when nobody listens.
final class EventHub: Sendable {
    private struct State {
        var nextID: UInt64 = 1
        var streams: [UInt64: TaskEventBuffer] = [:] {
            didSet { streamList = Array(streams.values) }
        }
        /// `streams`' values, kept as an array so that publishing an event
        /// takes a reference to it instead of building one.
        var streamList: [TaskEventBuffer] = []
        var endpointObservers: [String: [(id: UInt64, observer: PocketTaskObserver)]] = [:]
    }

    private let state = Lock(State())
    /// Subscribers plus endpoint observers; read on every `send`.
    let listenerCount = Atomic<Int>(0)
    private let nextTask = Atomic<UInt64>(1)

    /// Whether anyone listens to every request's events.
    var isListening: Bool { listenerCount.load(ordering: .relaxed) > 0 }

    /// The sink of a request's events, or nil when nobody listens to them
    /// (no subscriber, no endpoint observer, no observer in `options`).
    func sink(for request: PocketRequest, options: PocketSendOptions) -> EventSink? {
        guard listenerCount.load(ordering: .relaxed) > 0 || !options.observers.isEmpty else { return nil }
        return EventSink(hub: self, taskID: newTaskID(), method: request.method, url: request.url,
                         endpoint: options.endpoint ?? request.endpointPath, observers: options.observers,
                         metadata: request.metadata)
    }

    func newTaskID() -> UInt64 { nextTask.add(1, ordering: .relaxed).oldValue }

    func subscribe(bufferingNewest limit: Int) -> PocketTaskEvents {
        let buffer = TaskEventBuffer(limit: limit)
        let id = state.withLock { s -> UInt64 in
            let id = s.nextID
            s.nextID += 1
            s.streams[id] = buffer
            return id
        }
        listenerCount.add(1, ordering: .relaxed)
        // A strong reference: the hub holds nothing of the subscription
        // but its buffer (no cycle), and a weakly referenced hub would move
        // every request's retain of it to the runtime's slow path.
        return PocketTaskEvents(buffer: buffer) {
            let removed = self.state.withLock { $0.streams.removeValue(forKey: id) != nil }
            if removed { self.listenerCount.subtract(1, ordering: .relaxed) }
        }
    }

    func addObserver(endpoint: String, _ observer: PocketTaskObserver) -> PocketObserverToken {
        let id = state.withLock { s -> UInt64 in
            let id = s.nextID
            s.nextID += 1
            s.endpointObservers[endpoint, default: []].append((id, observer))
            return id
        }
        listenerCount.add(1, ordering: .relaxed)
        return PocketObserverToken(id: id)
    }

    func removeObserver(_ token: PocketObserverToken) {
        let removed = state.withLock { s -> Bool in
            for (key, list) in s.endpointObservers {
                guard let i = list.firstIndex(where: { $0.id == token.id }) else { continue }
                s.endpointObservers[key]!.remove(at: i)
                if s.endpointObservers[key]!.isEmpty { s.endpointObservers[key] = nil }
                return true
            }
            return false
        }
        if removed { listenerCount.subtract(1, ordering: .relaxed) }
    }

    /// Delivers `event` to the endpoint's observers and every subscriber
    /// (outside the lock).
    func publish(_ event: PocketTaskEvent) {
        let (streams, observers) = state.withLock { s in
            (s.streamList, s.endpointObservers.isEmpty ? [] : s.endpointObservers[event.endpoint] ?? [])
        }
        for entry in observers where entry.observer.states.contains(event.state) { entry.observer.handler(event) }
        for buffer in streams { buffer.yield(event) }
    }

    func finishAll() {
        let streams = state.withLock { s in Array(s.streams.values) }
        for buffer in streams { buffer.finish() }
    }
}

/// Where one task's events go: its own observers and the client's hub.
// A class, not a struct: the request path hands it from stage to stage and
// keeps it in the middleware context, and a copy of nine fields (six of them
// reference-counted) at each step cost more than the one allocation.
final class EventSink: Sendable {
    let hub: EventHub
    let taskID: UInt64
    let method: PocketMethod
    let url: URL
    let endpoint: String
    let observers: [PocketTaskObserver]
    /// A queued task, whose observers may change while it runs.
    let task: PocketQueuedTask?
    let metadata: (any Sendable)?

    init(hub: EventHub, taskID: UInt64, method: PocketMethod, url: URL, endpoint: String, observers: [PocketTaskObserver],
         task: PocketQueuedTask? = nil, metadata: (any Sendable)? = nil) {
        self.hub = hub
        self.taskID = taskID
        self.method = method
        self.url = url
        self.endpoint = endpoint
        self.observers = observers
        self.task = task
        self.metadata = metadata
    }

    func emit(_ state: PocketTaskState, attempt: Int, status: Int? = nil, error: (any Error)? = nil,
              retryDelay: Duration? = nil) {
        let hubListens = hub.listenerCount.load(ordering: .relaxed) > 0
        let observers = task.map { self.observers + $0.observers } ?? self.observers
        guard hubListens || observers.contains(where: { $0.states.contains(state) }) else { return }
        let event = PocketTaskEvent(taskID: taskID, state: state, method: method, url: url, endpoint: endpoint,
                              attempt: attempt, status: status, error: error, retryDelay: retryDelay, metadata: metadata)
        for observer in observers where observer.states.contains(state) { observer.handler(event) }
        if hubListens { hub.publish(event) }
    }
}
