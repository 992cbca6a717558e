import Synchronization

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
