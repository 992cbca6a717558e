import Dispatch

/// Where a `PocketCall`'s handlers run. Whichever is chosen, the handlers of one
/// call run one at a time and in order: progress reports as they came, then
/// the completion.
///
/// ```swift
/// client.call(request, on: .dispatch(DispatchQueue(label: "ui")))
/// client.call(request, on: .executor(client.executor))   // on the loop: never block there
/// ```
public struct PocketCallbackQueue: Sendable {
    enum Kind: Sendable {
        case dispatch(DispatchQueue)
        case executor((any TaskExecutor)?)
    }

    let kind: Kind

    /// Each event is `async`-dispatched to `queue`. Pass a serial queue: on a
    /// concurrent one, handlers of the same call could overlap or reorder.
    public static func dispatch(_ queue: DispatchQueue) -> PocketCallbackQueue { PocketCallbackQueue(kind: .dispatch(queue)) }

    /// Handlers run in one task that prefers `executor` (e.g. a client's
    /// `executor`, to stay on its loop thread).
    public static func executor(_ executor: any TaskExecutor) -> PocketCallbackQueue { PocketCallbackQueue(kind: .executor(executor)) }

    /// The default: handlers run in one task on Swift's global concurrent
    /// executor. A Linux service has no main queue to default to, and this
    /// never holds up the engine's loop.
    public static let task = PocketCallbackQueue(kind: .executor(nil))
}

/// Delivers one call's events, in order, where its `PocketCallbackQueue` says.
struct CallbackDelivery<Event: Sendable>: Sendable {
    private let post: @Sendable (Event) -> Void
    private let close: @Sendable () -> Void

    init(_ queue: PocketCallbackQueue, handle: @escaping @Sendable (Event) -> Void) {
        switch queue.kind {
        case .dispatch(let q):
            post = { event in q.async { handle(event) } }
            close = {}
        case .executor(let executor):
            let (events, continuation) = AsyncStream<Event>.makeStream()
            Task(executorPreference: executor) {
                for await event in events { handle(event) }
            }
            post = { continuation.yield($0) }
            close = { continuation.finish() }
        }
    }

    func send(_ event: Event) { post(event) }

    /// No more events: ends the delivering task once it has run the rest.
    func finish() { close() }
}
