#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Passes a hop's `finish` on only if that hop's response is the final one:
/// the hop may end before or after the redirect loop decides (a streamed
/// body ends long after its head), so whichever comes second calls it.
final class ProgressFinishGate: Sendable {
    private struct State {
        var final = false
        var finished = false
        var called = false
    }

    private let state = Lock(State())
    private let finish: @Sendable () -> Void

    private init(finish: @escaping @Sendable () -> Void) { self.finish = finish }

    /// A handler for one hop and its gate; nil when `progress` has no `finish`.
    static func wrap(_ progress: PocketProgressHandler?) -> (handler: PocketProgressHandler, gate: ProgressFinishGate)? {
        guard let progress, let finish = progress.finish else { return nil }
        let gate = ProgressFinishGate(finish: finish)
        var handler = progress // every setting kept; only the end is gated
        handler.finish = { gate.hopFinished() }
        return (handler, gate)
    }

    /// The hop's request ended.
    func hopFinished() { update { $0.finished = true } }

    /// The hop's response is the one returned (or its error is thrown).
    func markFinal() { update { $0.final = true } }

    private func update(_ change: (inout State) -> Void) {
        let call = state.withLock { s -> Bool in
            change(&s)
            guard s.final, s.finished, !s.called else { return false }
            s.called = true
            return true
        }
        if call { finish() }
    }
}
