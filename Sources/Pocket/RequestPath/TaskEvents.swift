/// A subscription to a client's task events (`PocketClient.events()`): an
/// `AsyncSequence` that keeps the newest `bufferingNewest` events a slow
/// reader has not taken yet (older ones are dropped, so memory is bounded)
/// and ends when the client shuts down or the reading task is cancelled.
/// Dropping it (and its iterator) ends the subscription. Iterate it once.
///
/// Written for the event rate of a busy client: publishing takes one lock
/// and wakes the reader only when it waits; a reader that wakes takes
/// everything buffered before it waits again.
public final class PocketTaskEvents: AsyncSequence, Sendable {
    /// One state change of one task.
    public typealias Element = PocketTaskEvent
    let buffer: TaskEventBuffer
    private let unsubscribe: @Sendable () -> Void

    init(buffer: TaskEventBuffer, unsubscribe: @escaping @Sendable () -> Void) {
        self.buffer = buffer
        self.unsubscribe = unsubscribe
    }

    deinit {
        unsubscribe()
        buffer.finish()
    }

    /// Reads the subscription's events in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let events: PocketTaskEvents
        /// Taken from the buffer in one go; handed out in order.
        @usableFromInline var batch: [PocketTaskEvent] = []
        @usableFromInline var next = 0

        // An event already taken is handed out in the reader's own code
        // (inlinable: no call, no task frame per event); only an empty
        // batch calls into Pocket to wait for the next one.

        /// The next event, waiting for one; nil once the client shut down (or the
        /// subscription ended) and everything buffered was read.
        @inlinable
        public mutating func next() async -> PocketTaskEvent? {
            await next(isolation: nil)
        }

        /// `next()`, as `for await` calls it.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> PocketTaskEvent? {
            if next < batch.count {
                defer { next += 1 }
                return batch[next]
            }
            return await refill()
        }

        /// The next batch, waited for; its first event.
        @usableFromInline
        nonisolated(nonsending) mutating func refill() async -> PocketTaskEvent? {
            batch = await events.buffer.take()
            next = 0
            guard !batch.isEmpty else { return nil }
            next = 1
            return batch[0]
        }
    }

    /// An iterator over this subscription (read it from one task).
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: self) }
}

/// The events between the publishing requests and one subscription's reader.
final class TaskEventBuffer: Sendable {
    private struct State {
        var events: [PocketTaskEvent] = []
        var finished = false
        var waiter: UnsafeContinuation<[PocketTaskEvent], Never>?

        /// The newest `limit` buffered events, handed to the reader whole;
        /// the next batch starts with room for as many (not grown from one
        /// by doubling).
        mutating func takeEvents(limit: Int) -> [PocketTaskEvent] {
            if events.count > limit { events.removeFirst(events.count - limit) }
            let batch = events
            events = []
            events.reserveCapacity(batch.count)
            return batch
        }
    }

    private let state = Lock(State())
    private let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// Adds `event` (dropping the oldest past the limit) and wakes a waiting reader.
    func yield(_ event: PocketTaskEvent) {
        let woken = state.withLock { s -> (UnsafeContinuation<[PocketTaskEvent], Never>, [PocketTaskEvent])? in
            guard !s.finished else { return nil }
            if let waiter = s.waiter {
                s.waiter = nil
                return (waiter, [event])
            }
            s.events.append(event)
            // A reader that fell behind loses the oldest: dropped `limit` at
            // a time (one move of the array each `limit` events, not one per
            // event), so at most twice the limit is held.
            if s.events.count >= 2 * limit { s.events.removeFirst(s.events.count - limit) }
            return nil
        }
        if let (waiter, events) = woken { waiter.resume(returning: events) }
    }

    /// Ends the sequence: a waiting reader gets what is left, then nil.
    func finish() {
        let waiter = state.withLock { s -> UnsafeContinuation<[PocketTaskEvent], Never>? in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: [])
    }

    /// Everything buffered, waiting for at least one event; empty at the end.
    func take() async -> [PocketTaskEvent] {
        if let ready = takeBuffered() { return ready }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (c: UnsafeContinuation<[PocketTaskEvent], Never>) in
                let ready = state.withLock { s -> [PocketTaskEvent]? in
                    if !s.events.isEmpty || s.finished || Task.isCancelled { return s.takeEvents(limit: limit) }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    private func takeBuffered() -> [PocketTaskEvent]? {
        state.withLock { s in
            guard !s.events.isEmpty || s.finished else { return nil }
            return s.takeEvents(limit: limit)
        }
    }
}
