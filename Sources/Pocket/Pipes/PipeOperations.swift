
/// The operations of one pipe in flight, so `cancel()` reaches all of them.
final class PipeOperations: Sendable {
    private struct State {
        var next: UInt64 = 0
        var running: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state = Lock(State())

    /// Runs `work` as its own task, cancellable by `cancelAll()` and by
    /// cancelling the caller. An operation cancelled either way fails with
    /// `.cancelled`, even if its response had already arrived.
    func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await work() }
        let id = state.withLock { s -> UInt64 in
            s.next += 1
            s.running[s.next] = { task.cancel() }
            return s.next
        }
        defer { _ = state.withLock { $0.running.removeValue(forKey: id) } }
        let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
        if task.isCancelled {
            throw PocketError(.cancelled, "the pipe's operation was cancelled")
        }
        return try result.get()
    }

    /// Cancels every operation running now.
    func cancelAll() {
        let cancels = state.withLock { Array($0.running.values) }
        for cancel in cancels { cancel() }
    }

    /// Operations running now.
    var count: Int { state.withLock { $0.running.count } }
}
