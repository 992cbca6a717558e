internal import CHTTPEngine
#if canImport(Glibc)
import Glibc
#endif

/// How the operating system schedules a client's event-loop threads
/// (`PocketClient.setLoopScheduling(_:)`).
public enum PocketLoopScheduling: Sendable, Hashable {
    /// The system's default policy (`SCHED_OTHER` on Linux).
    case standard
    /// Linux's `SCHED_BATCH`: the same share of the CPU, but a loop thread
    /// that wakes up (a response arrived, a task submitted a request) does
    /// not preempt the thread running on its core; it runs when that thread
    /// blocks or its time slice ends.
    ///
    /// For services whose own threads call the client on the same cores,
    /// such as a Hummingbird or SwiftNIO server: with the standard policy
    /// each submission can wake the loop and switch to it at once, so the
    /// loop sends one request per pass and the caller is interrupted per
    /// request; with `batch` the caller goes on until it waits, and the loop
    /// then sends everything submitted meanwhile in one pass. In a gateway
    /// on one core calling nginx through Pocket with tracing, metrics and a
    /// retry policy installed (2026-11-27, a 2-core VM), this raised the
    /// requests per second at 64 connections from 12–19k to 22k, and cut
    /// the context switches per request from 0.75–1.15 to 0.3. The cost:
    /// a response can wait for the running thread's time slice (a few
    /// milliseconds at most) when the core is busy with something else.
    case batch
}

extension PocketClient {
    /// Puts the engine's event-loop threads on `scheduling` (each loop
    /// applies it to its own thread on its next pass); returns whether every
    /// loop did. The standard policy is the default; see
    /// `PocketLoopScheduling.batch` for when to change it.
    ///
    /// ```swift
    /// let client = try PocketClient(configuration: config)
    /// await client.setLoopScheduling(.batch)
    /// ```
    ///
    /// The threads are the engine's: scoped clients share them, and the
    /// last call wins. Linux only (with glibc); elsewhere, or once the client
    /// has shut down, nothing changes and this returns false.
    @discardableResult
    public func setLoopScheduling(_ scheduling: PocketLoopScheduling) async -> Bool {
        var applied = true
        for loop in 0..<max(1, configuration.engineThreads) {
            let done = await engine.setScheduling(scheduling, loop: UInt32(clamping: loop))
            applied = applied && done
        }
        return applied
    }
}

extension Engine {
    /// Runs the policy change on loop `loop`'s own thread (a thread can
    /// change its own policy by passing 0 as its id) and waits for it.
    func setScheduling(_ scheduling: PocketLoopScheduling, loop: UInt32) async -> Bool {
        #if os(Linux) && canImport(Glibc)
        // SCHED_OTHER and SCHED_BATCH (glibc declares the latter only with _GNU_SOURCE).
        let policy: Int32 = scheduling == .batch ? 3 : 0
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let change = SchedulingChange(policy: policy, continuation: continuation)
            let arg = Unmanaged.passRetained(change).toOpaque()
            let posted = pk_engine_post(raw, loop, { _, arg in
                let change = Unmanaged<SchedulingChange>.fromOpaque(arg!).takeRetainedValue()
                var param = sched_param()
                param.sched_priority = 0
                change.continuation.resume(returning: sched_setscheduler(0, change.policy, &param) == 0)
            }, arg)
            if posted != 0 {
                // The loop has exited: the job will not run.
                Unmanaged<SchedulingChange>.fromOpaque(arg).release()
                continuation.resume(returning: false)
            }
        }
        #else
        return false
        #endif
    }
}

/// One policy change posted to a loop, and who waits for it.
private final class SchedulingChange: Sendable {
    let policy: Int32
    let continuation: CheckedContinuation<Bool, Never>

    init(policy: Int32, continuation: CheckedContinuation<Bool, Never>) {
        self.policy = policy
        self.continuation = continuation
    }
}
