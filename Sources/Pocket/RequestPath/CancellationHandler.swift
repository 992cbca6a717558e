/// Runs `operation`, calling `onCancel` if the task is cancelled meanwhile
/// (at once when it already is), on the caller's executor: the request
/// path's `withTaskCancellationHandler`.
///
/// The standard library's `withTaskCancellationHandler` takes an
/// `isolation` and checks on entry and on exit whether to switch to it; in
/// a task with an executor preference each check looks the preference up
/// under the task's status lock (about 270 instructions a request, by
/// `pocket-bench --count`). The variant the standard library keeps for
/// callers that inherit their executor is the same runtime entry without
/// that parameter: it runs `operation` where the caller runs, as a
/// `nonisolated(nonsending)` function does, with nothing to check.
@inline(__always)
nonisolated(nonsending) func withCancellationHandler<T>(_ operation: () async throws -> T,
                                                        onCancel: @Sendable () -> Void) async rethrows -> T {
    try await _unsafeInheritExecutor_withTaskCancellationHandler(operation: operation, onCancel: onCancel)
}
