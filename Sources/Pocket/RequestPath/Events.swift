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

/// A task's endpoint key (`PocketTaskEvent.endpoint`): named by the
/// caller, or its URL's path, made only when read (most requests' keys are
/// never read: no observer listens by endpoint). Holds the URL, not the
/// request: an event kept by its reader keeps no request body alive.
enum EndpointKey: Sendable {
    case named(String)
    /// The path of the task's URL (`TaskFields.url`), worked out when read:
    /// most tasks never read it, and a second reference to the URL here
    /// cost a retain and a release per request.
    case path
}

/// The fields of a task's events that do not change from one to the next.
/// They live in the task's `PocketMiddlewareContext`, which its events
/// reference (one object per request for both).
struct TaskFields {
    var taskID: UInt64
    var method: PocketMethod
    var url: URL
    var endpoint: EndpointKey
    var metadata: (any Sendable)?

    /// The endpoint key as events and middleware read it.
    var endpointValue: String {
        switch endpoint {
        case .named(let name): name
        case .path: url.path(percentEncoded: false)
        }
    }
}

extension PocketMiddlewareContext {
    /// A task's identity for events made outside the request path (a
    /// queue's pending and cancelled tasks).
    convenience init(identity fields: TaskFields) {
        self.init(fields: fields, clock: nil, started: .zero)
    }

    /// A copy with `change` made (an event's setter: events share the original).
    func with(_ change: (inout TaskFields) -> Void) -> PocketMiddlewareContext {
        var fields = self.fields
        change(&fields)
        return PocketMiddlewareContext(identity: fields)
    }
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
/// Its counts let a request skip making events when nobody listens.
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
    /// Subscribers (`events()`); with the next, read on every `send`.
    private let subscriberCount = Atomic<Int>(0)
    /// Endpoint observers: an event looks them up only when there are some.
    private let endpointObserverCount = Atomic<Int>(0)
    private let nextTask = Atomic<UInt64>(1)

    /// Whether anyone listens to every request's events.
    var isListening: Bool { subscriberCount.load(ordering: .relaxed) > 0 || hasEndpointObservers }

    /// Whether a request sent with `options` reports events (a
    /// subscriber, an endpoint observer, or an observer in `options`).
    func listens(options: PocketSendOptions) -> Bool {
        isListening || !options.observers.isEmpty
    }

    /// The subscriptions a task starting now reports to (a request reports
    /// to those that exist when it starts: one lock per task, not one per event).
    var subscribers: [TaskEventBuffer] {
        guard subscriberCount.load(ordering: .relaxed) > 0 else { return [] }
        return state.withLock { $0.streamList }
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
        subscriberCount.add(1, ordering: .relaxed)
        // A strong reference: the hub holds nothing of the subscription
        // but its buffer (no cycle), and a weakly referenced hub would move
        // every request's retain of it to the runtime's slow path.
        return PocketTaskEvents(buffer: buffer) {
            let removed = self.state.withLock { $0.streams.removeValue(forKey: id) != nil }
            if removed { self.subscriberCount.subtract(1, ordering: .relaxed) }
        }
    }

    func addObserver(endpoint: String, _ observer: PocketTaskObserver) -> PocketObserverToken {
        let id = state.withLock { s -> UInt64 in
            let id = s.nextID
            s.nextID += 1
            s.endpointObservers[endpoint, default: []].append((id, observer))
            return id
        }
        endpointObserverCount.add(1, ordering: .relaxed)
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
        if removed { endpointObserverCount.subtract(1, ordering: .relaxed) }
    }

    /// Whether an event must look for observers of its endpoint.
    var hasEndpointObservers: Bool { endpointObserverCount.load(ordering: .relaxed) > 0 }

    /// Delivers `event` to its endpoint's observers (called outside the
    /// lock; an observer removed before this runs is not called).
    func publishToEndpointObservers(_ event: PocketTaskEvent) {
        let observers = state.withLock { s in s.endpointObservers.isEmpty ? [] : s.endpointObservers[event.endpoint] ?? [] }
        for entry in observers where entry.observer.states.contains(event.state) { entry.observer.handler(event) }
    }

    func finishAll() {
        let streams = state.withLock { s in Array(s.streams.values) }
        for buffer in streams { buffer.finish() }
    }
}

/// Where one task's events go: its own observers, the client's
/// subscriptions that existed when it started, and the hub's endpoint observers.
// A struct of references (the per-task fields live in `identity`, made
// once): handed from stage to stage, it is borrowed, not copied.
struct EventSink: Sendable {
    let hub: EventHub
    /// Shared by all of the task's events (it references no listener, so
    /// an event kept in a buffer holds no cycle).
    let identity: PocketMiddlewareContext
    let observers: [PocketTaskObserver]
    /// A queued task, whose observers may change while it runs.
    let task: PocketQueuedTask?
    /// The `events()` subscriptions when the task started (a dropped one
    /// takes no more events: its buffer is finished).
    let subscribers: [TaskEventBuffer]

    var taskID: UInt64 { identity.fields.taskID }

    init(hub: EventHub, taskID: UInt64, method: PocketMethod, url: URL, endpoint: EndpointKey, observers: [PocketTaskObserver],
         task: PocketQueuedTask? = nil, metadata: (any Sendable)? = nil) {
        self.init(hub: hub, identity: PocketMiddlewareContext(identity: TaskFields(taskID: taskID, method: method, url: url, endpoint: endpoint,
                                                                        metadata: metadata)),
                  observers: observers, task: task)
    }

    /// The sink of the task whose context is `identity`.
    init(hub: EventHub, identity: PocketMiddlewareContext, observers: [PocketTaskObserver], task: PocketQueuedTask? = nil) {
        self.hub = hub
        self.identity = identity
        self.observers = observers
        self.task = task
        self.subscribers = hub.subscribers
    }

    func emit(_ state: PocketTaskState, attempt: Int, status: Int? = nil, error: (any Error)? = nil,
              retryDelay: Duration? = nil, hedge: Int? = nil) {
        let byEndpoint = hub.hasEndpointObservers
        let observers = task.map { self.observers + $0.observers } ?? self.observers
        guard !subscribers.isEmpty || byEndpoint || observers.contains(where: { $0.states.contains(state) }) else { return }
        let event = PocketTaskEvent(task: identity, state: state, attempt: attempt, status: status, error: error,
                                    retryDelay: retryDelay, hedge: hedge)
        for observer in observers where observer.states.contains(state) { observer.handler(event) }
        if byEndpoint { hub.publishToEndpointObservers(event) }
        for buffer in subscribers { buffer.yield(event) }
    }
}
