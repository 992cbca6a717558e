#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPocketTestTLS
import Foundation

/// A pthread running a Swift closure that can be joined with a deadline.
///
/// `join(timeoutMilliseconds:)` waits for the body to finish, then
/// `pthread_join`s it; if the body is still running at the deadline (a test
/// handler that never returns) the thread is detached instead, so shutdown
/// never hangs.
final class JoinableThread: @unchecked Sendable {
    /// Completion flag shared by the thread and its owner (retained by both,
    /// so a detached thread never touches a freed owner).
    private final class State: @unchecked Sendable {
        // Invariant: `finished` is read and written only with `condition` locked.
        let condition = NSCondition()
        var finished = false
    }

    private final class Context {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    // Invariant: `thread` is written once in `init`; `consumed` is read and
    // written only with `state.condition` locked, so the pthread is joined or
    // detached exactly once.
    private let state = State()
    private var thread = pthread_t()
    private var consumed = false

    /// Starts `body` on a new thread.
    init(_ body: @escaping @Sendable () -> Void) throws {
        let state = self.state
        let box = Unmanaged.passRetained(Context {
            body()
            // OpenSSL's state of this thread (a TLS server's error queue)
            // is freed here, before a joiner can see the body finished.
            pktt_thread_end()
            state.condition.lock()
            state.finished = true
            state.condition.broadcast()
            state.condition.unlock()
        })
        let rc = pthread_create(&thread, nil, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            context.body()
            return nil
        }, box.toOpaque())
        if rc != 0 {
            box.release()
            consumed = true
            throw SocketError("pthread_create", code: rc)
        }
    }

    /// True once the body has returned.
    var isFinished: Bool {
        state.condition.lock()
        defer { state.condition.unlock() }
        return state.finished
    }

    /// Waits up to `timeoutMilliseconds` for the body, then joins it (or
    /// detaches it if it is still running). Returns true if the body finished.
    /// Idempotent.
    @discardableResult
    func join(timeoutMilliseconds: Int) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMilliseconds) / 1000)
        let condition = state.condition
        condition.lock()
        defer { condition.unlock() }
        while !state.finished && Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        if !consumed {
            consumed = true
            if state.finished {
                pthread_join(thread, nil)
            } else {
                pthread_detach(thread)
            }
        }
        return state.finished
    }

    deinit {
        // Never leave a pthread neither joined nor detached.
        if !consumed { pthread_detach(thread) }
    }
}
