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
    /// thread runs the whole batch. That job is one long-lived task parked
    /// between batches, so a batch allocates nothing.
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
        var remoteLast: InFlightRequest?
        var remoteCount = 0
        var local: InFlightRequest?
        while let r = list {  // reversing restores completion order
            list = r.nextCompleted
            if r.resumesOnLoop {
                r.nextCompleted = local
                local = r
            } else {
                if remoteLast == nil { remoteLast = r }
                r.nextCompleted = remote
                remote = r
                remoteCount += 1
            }
        }
        Self.resumeAll(local.take())
        if remoteCount == 1 {
            remoteLast = nil
            Self.resumeAll(remote.take())
        } else if let first = remote.take(), let last = remoteLast.take() {
            handOff(first, last: last)
        }
    }

    // MARK: the resumer

    /// Batches of finished requests whose tasks wait on the global executor,
    /// and the one task that resumes them there (made on first use, parked
    /// on a continuation between batches: a batch costs no allocation).
    private struct Resumer {
        var head: InFlightRequest?
        var tail: InFlightRequest?
        var parked: UnsafeContinuation<Bool, Never>?
        var running = false
        var closed = false
    }

    private let resumer = Lock<Resumer>(Resumer())

    /// Loop thread: queues a batch (linked through `nextCompleted`, in
    /// completion order) for the resumer, waking or starting it.
    private func handOff(_ first: InFlightRequest, last: InFlightRequest) {
        var wake: UnsafeContinuation<Bool, Never>?
        var start = false
        resumer.withLock { r in
            if let tail = r.tail { tail.nextCompleted = first } else { r.head = first }
            r.tail = last
            if let parked = r.parked {
                wake = parked
                r.parked = nil
            } else if !r.running {
                r.running = true
                start = true
            }
        }
        wake?.resume(returning: true)
        if start { Task.detached { await self.resumeBatches() } }
    }

    /// The resumer task: resumes each queued batch, parks when there is
    /// none, ends once the engine is gone (`closeResumer`).
    private func resumeBatches() async {
        while true {
            var batch = resumer.withLock { r -> InFlightRequest? in
                let head = r.head
                r.head = nil
                r.tail = nil
                return head
            }
            if batch != nil {
                Self.resumeAll(batch.take())
                continue
            }
            let more = await withUnsafeContinuation { (parked: UnsafeContinuation<Bool, Never>) in
                let ready = resumer.withLock { r -> Bool? in
                    if r.head != nil { return true }
                    if r.closed {
                        r.running = false
                        return false
                    }
                    r.parked = parked
                    return nil
                }
                if let ready { parked.resume(returning: ready) }
            }
            if !more { return }
        }
    }

    /// The engine is gone (its loops have exited): the resumer task ends.
    func closeResumer() {
        let parked = resumer.withLock { r -> UnsafeContinuation<Bool, Never>? in
            r.closed = true
            let p = r.parked
            r.parked = nil
            if p != nil { r.running = false }
            return p
        }
        parked?.resume(returning: false)
    }

    private static func resumeAll(_ first: consuming InFlightRequest?) {
        var next = first
        while let r = next.take() {
            next = r.nextCompleted.take()
            let resumption = r.takeResumption()
            // The last reference to `r` goes before the task runs on.
            _ = consume r
            resumption.run()
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

