internal import CHTTPEngine

/// The engine's event loop as a `TaskExecutor`.
///
/// A task that prefers this executor runs its code on the loop thread, like
/// work on a SwiftNIO event loop: when a response completes, the waiting task
/// continues on the same thread at the end of the loop's pass, with no thread
/// hop and no wake-up syscall. Code on it must not block.
final class LoopExecutor: TaskExecutor, @unchecked Sendable {
    // Invariant: `engine` is set once, right after the engine is created, and
    // the C engine stays alive while this executor is reachable from it.
    nonisolated(unsafe) var engine: OpaquePointer?

    init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if let engine {
            let arg = unsafeBitCast(unowned, to: UnsafeMutableRawPointer.self)
            let rc = pk_engine_post(engine, 0, { ctx, arg in
                let executor = Unmanaged<LoopExecutor>.fromOpaque(ctx!).takeUnretainedValue()
                let job = unsafeBitCast(arg!, to: UnownedJob.self)
                job.runSynchronously(on: executor.asUnownedTaskExecutor())
            }, arg)
            if rc == 0 { return }
        }
        // The loop has exited (shutdown): the task goes on in the global pool.
        globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
    }
}
