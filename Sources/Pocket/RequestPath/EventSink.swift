#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
