internal import CHTTPEngine

/// The engine's event loop as a `TaskExecutor`.
///
/// A task that prefers this executor runs its code on the loop thread, like
/// work on a SwiftNIO event loop: when a response completes, the waiting task
/// continues on the same thread at the end of the loop's pass, with no thread
/// hop and no wake-up syscall. Code on it must not block.
final class LoopExecutor: TaskExecutor, @unchecked Sendable {
    /// The engine to post to; nil once it is being destroyed. Posting holds
    /// the lock, so a post never reaches a freed engine.
    private let engine = Lock<UInt?>(nil)

    func attach(_ raw: OpaquePointer?) {
        engine.withLock { $0 = raw.map { UInt(bitPattern: $0) } }
    }

    /// Requests finished during the current loop pass, resumed together at
    /// its end (an intrusive list through `InFlightRequest.nextCompleted`).
    private let completed = Lock<InFlightRequest?>(nil)

    /// Streamed bodies whose reader waits for what arrived in this pass.
    private let wakes = Lock<[BodyStreamState]>([])

    init() {}

    /// Loop thread: wake `stream`'s reader at the end of the pass — once
    /// per pass, however many deliveries the pass made, so a fast body does
    /// not cost a thread hop per read.
    func wakeAtPassEnd(_ stream: BodyStreamState) {
        wakes.withLock { $0.append(stream) }
    }

    /// Loop thread: a request finished; its continuation is resumed at the
    /// end of the pass.
    func complete(_ request: InFlightRequest) {
        completed.withLock { head in
            request.nextCompleted = head
            head = request
        }
    }

    /// Loop thread, end of a pass: resume everything that finished in it, in
    /// completion order.
    ///
    /// Tasks running on this loop are resumed here directly (that only queues
    /// them for the loop's next pass). The others wait on the global
    /// executor, and resuming each from here would wake a pool thread per
    /// response: on a busy core the scheduler then switches to that thread at
    /// once, and loop and pool ping-pong twice per request. So one job on the
    /// global executor resumes them all: one wake-up per pass, and the pool
    /// thread runs the whole batch.
    func resumeCompleted() {
        // Swapped out, not copied: the array is rarely non-empty, and an
        // empty one must cost no allocation per pass.
        let streams = wakes.withLock { w -> [BodyStreamState] in
            if w.isEmpty { return [] }
            defer { w = [] }
            return w
        }
        for stream in streams { stream.wake() }
        var list = completed.withLock { head -> InFlightRequest? in
            let l = head
            head = nil
            return l
        }
        var remote: InFlightRequest?
        var remoteCount = 0
        var local: InFlightRequest?
        while let r = list {  // reversing restores completion order
            list = r.nextCompleted
            if r.resumesOnLoop {
                r.nextCompleted = local
                local = r
            } else {
                r.nextCompleted = remote
                remote = r
                remoteCount += 1
            }
        }
        Self.resumeAll(local)
        if remoteCount == 1 {
            Self.resumeAll(remote)
        } else if let batch = remote {
            let box = UncheckedBox(batch)
            Task.detached { Self.resumeAll(box.value) }
        }
    }

    private static func resumeAll(_ first: InFlightRequest?) {
        var next = first
        while let r = next {
            next = r.nextCompleted
            r.nextCompleted = nil
            r.resume()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let arg = unsafeBitCast(unowned, to: UnsafeMutableRawPointer.self)
        let posted = engine.withLock { bits -> Bool in
            guard let bits, let raw = OpaquePointer(bitPattern: bits) else { return false }
            return pk_engine_post(raw, 0, { ctx, arg in
                let executor = Unmanaged<LoopExecutor>.fromOpaque(ctx!).takeUnretainedValue()
                let job = unsafeBitCast(arg!, to: UnownedJob.self)
                job.runSynchronously(on: executor.asUnownedTaskExecutor())
            }, arg) == 0
        }
        if posted { return }
        // The loop has exited (shutdown) or the client is gone: the task goes
        // on in the global pool.
        globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
    }
}

/// Carries the batch list to the resumer job; the list is owned by that job
/// alone once handed over.
private struct UncheckedBox: @unchecked Sendable {
    let value: InFlightRequest
    init(_ value: InFlightRequest) { self.value = value }
}
