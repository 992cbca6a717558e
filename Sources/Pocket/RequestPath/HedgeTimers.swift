/// Something a client's hedging timer fires: a hedged request in flight
/// (`HedgeRace`). `timerSlot` is its place in the timers' heap (-1 when it
/// is in none), read and written only under the `HedgeTimers` lock.
protocol HedgeTimer: AnyObject, Sendable {
    var timerSlot: Int { get set }
    /// The delay passed (called with no lock held, on the timers' task).
    func fire()
}

/// The hedging delays of a client's requests in flight, on one timer: a
/// heap of (due instant, request) and one task that sleeps until the
/// earliest and fires those that are due. A request arms and disarms its
/// delay with a lock and a heap step; no task, sleep or continuation is made
/// per request, so a hedged request that is answered before its delay costs
/// next to nothing.
///
/// The task sleeps until the earliest delay it knew of when it went to
/// sleep; one armed later is due later (a fixed delay), so the task wakes
/// about once per delay while requests flow, not once per request. An
/// earlier one (a shorter percentile delay) starts a new task, and the old
/// one ends when it wakes. With nothing armed the task ends; the next arm
/// starts one.
final class HedgeTimers: Sendable {
    /// Due times are nanoseconds after `PocketDeadline.origin`: an entry of
    /// an integer and a reference (a `ContinuousClock.Instant`, of a size
    /// known only at run time here, made every heap step go through its
    /// value witnesses).
    private struct Entry {
        var due: Int64
        let timer: any HedgeTimer
    }

    private struct State {
        var heap: [Entry] = []
        /// When the sleeping task wakes; nil when none sleeps.
        var wake: Int64?
        /// The sleeping task's number: an older one ends when it wakes.
        var generation = 0
        var stopped = false
    }

    private let state = Lock(State())

    init() {}

    /// Fires `timer` at `due` (unless disarmed first).
    func arm(_ timer: any HedgeTimer, at due: ContinuousClock.Instant) {
        arm(timer, atNanos: PocketDeadline.nanoseconds(due))
    }

    /// Fires `timer` at `due`, in nanoseconds after `PocketDeadline.origin`
    /// (unless disarmed first).
    func arm(_ timer: any HedgeTimer, atNanos due: Int64) {
        let sleeper: Int? = state.withLock { s in
            guard !s.stopped, timer.timerSlot < 0 else { return nil }
            s.heap.append(Entry(due: due, timer: timer))
            timer.timerSlot = s.heap.count - 1
            Self.siftUp(&s.heap, from: s.heap.count - 1)
            if let wake = s.wake, wake <= due { return nil }
            s.generation += 1
            s.wake = due
            return s.generation
        }
        if let sleeper {
            Task.detached { await self.sleep(generation: sleeper, until: due) }
        }
    }

    /// Takes `timer` out, if it is still armed.
    func disarm(_ timer: any HedgeTimer) {
        state.withLock { s in
            let i = timer.timerSlot
            guard i >= 0, i < s.heap.count, s.heap[i].timer === timer else { return }
            Self.remove(&s.heap, at: i)
        }
    }

    /// Drops every delay and ends the task (the client shut down): no hedge
    /// is sent after.
    func stop() {
        state.withLock { s in
            s.stopped = true
            for entry in s.heap { entry.timer.timerSlot = -1 }
            s.heap = []
            s.wake = nil
            s.generation += 1
        }
    }

    /// The sleeping task: waits until `due`, fires what is due, sleeps
    /// again until the earliest left; ends when none is left or a newer
    /// task took over.
    private func sleep(generation: Int, until due: Int64) async {
        var due = due
        while true {
            try? await Task.sleep(until: PocketDeadline.origin + .nanoseconds(due), clock: .continuous)
            let (fired, next) = state.withLock { s -> ([any HedgeTimer], Int64?) in
                guard s.generation == generation, !s.stopped else { return ([], nil) }
                let now = PocketDeadline.nowNanos()
                var fired: [any HedgeTimer] = []
                while let top = s.heap.first, top.due <= now {
                    fired.append(top.timer)
                    Self.remove(&s.heap, at: 0)
                }
                s.wake = s.heap.first?.due
                return (fired, s.wake)
            }
            for timer in fired { timer.fire() }
            guard let next else { return }
            due = next
        }
    }

    // MARK: the heap (earliest first), each entry's slot kept in its timer

    private static func remove(_ heap: inout [Entry], at i: Int) {
        heap[i].timer.timerSlot = -1
        let last = heap.count - 1
        if i != last {
            heap.swapAt(i, last)
            heap[i].timer.timerSlot = i
        }
        heap.removeLast()
        guard i < heap.count else { return }
        let moved = heap[i].timer
        siftDown(&heap, from: i)
        siftUp(&heap, from: moved.timerSlot)
    }

    private static func siftUp(_ heap: inout [Entry], from start: Int) {
        var i = start
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].due < heap[parent].due else { return }
            heap.swapAt(i, parent)
            heap[i].timer.timerSlot = i
            heap[parent].timer.timerSlot = parent
            i = parent
        }
    }

    private static func siftDown(_ heap: inout [Entry], from start: Int) {
        var i = start
        while true {
            let left = 2 * i + 1, right = left + 1
            var least = i
            if left < heap.count, heap[left].due < heap[least].due { least = left }
            if right < heap.count, heap[right].due < heap[least].due { least = right }
            guard least != i else { return }
            heap.swapAt(i, least)
            heap[i].timer.timerSlot = i
            heap[least].timer.timerSlot = least
            i = least
        }
    }
}
