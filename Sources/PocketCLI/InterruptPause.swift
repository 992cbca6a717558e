import Pocket
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Set by the SIGINT handler (an atomic store is async-signal-safe).
private let interruptRequested = Atomic<Bool>(false)

/// While a `-o` download runs, Ctrl-C (SIGINT) pauses it instead of killing
/// the process, so the partial body and its validators are kept for `-C -`
/// (the download then fails with `.cancelled`; `fired` tells why). The
/// handler only sets a flag; a task watching it (every 50 ms) ends the
/// download keeping its partial file (`cancelProducingResumeData`).
final class InterruptPause: Sendable {
    private let watcher: Task<Bool, Never>

    init(_ task: PocketDownloadTask) {
        interruptRequested.store(false, ordering: .sequentiallyConsistent)
        signal(SIGINT) { _ in interruptRequested.store(true, ordering: .sequentiallyConsistent) }
        watcher = Task {
            while !Task.isCancelled {
                if interruptRequested.load(ordering: .sequentiallyConsistent) {
                    _ = await task.cancelProducingResumeData()
                    return true
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return false
        }
    }

    /// SIGINT arrived during the download.
    var fired: Bool { interruptRequested.load(ordering: .sequentiallyConsistent) }

    /// Back to the default: a second Ctrl-C ends the process.
    func stop() {
        watcher.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
