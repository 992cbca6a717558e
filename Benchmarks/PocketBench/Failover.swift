import CPocketBenchServer
import Pocket
import PocketBenchKit
import Synchronization

/// `--kill-replica K:T`: kills embedded replica K at T into the measured
/// phase (`pkbs_kill_replica`: connections refused, open ones reset), hears
/// of its ejection from the replica set's observers, and sorts the failed
/// requests by whether they started before or after that ejection
/// (`BenchFailover`).
final class Failover: Sendable {
    private let kill: TailOptions.KillReplica
    private let port: UInt16
    private let phaseStart = Atomic<UInt64>(0)
    /// When the replica was killed (monotonic ns), 0: not yet.
    private let killedAt = Atomic<UInt64>(0)
    /// When it was first ejected after the kill (monotonic ns), 0: not yet.
    private let ejectedAt = Atomic<UInt64>(0)
    private let errorsBefore = Atomic<Int>(0)
    private let errorsAfter = Atomic<Int>(0)
    private let timer = Lock<Task<Void, Never>?>(nil)

    /// Kills replica `kill.index` (from 1), listening on `port`; its
    /// ejections are heard from `set` (none without one).
    init(_ kill: TailOptions.KillReplica, port: UInt16, set: PocketReplicaSet?) {
        self.kill = kill
        self.port = port
        set?.addObserver { [weak self] event in
            guard event.kind == .ejected, event.replica?.port == port else { return }
            self?.ejected(at: monotonicNanos())
        }
    }

    /// The measured phase started at `start`: the kill is due `kill.after` later.
    func phaseStarted(at start: UInt64) {
        phaseStart.store(start, ordering: .relaxed)
        let due = start &+ TailOptions.nanoseconds(kill.after)
        let replica = Int32(kill.index - 1)
        let task = Task { [self] in
            let now = monotonicNanos()
            if due > now { try? await Task.sleep(nanoseconds: due - now) }
            guard !Task.isCancelled else { return }
            // Before the kill: an ejection it causes comes after this time.
            killedAt.store(monotonicNanos(), ordering: .sequentiallyConsistent)
            _ = pkbs_kill_replica(replica)
        }
        timer.withLock { $0 = task }
    }

    private func ejected(at now: UInt64) {
        guard killedAt.load(ordering: .sequentiallyConsistent) != 0 else { return }
        _ = ejectedAt.compareExchange(expected: 0, desired: now, ordering: .sequentiallyConsistent)
    }

    /// A request that started at `start` failed.
    func failed(startedAt start: UInt64) {
        let ejected = ejectedAt.load(ordering: .sequentiallyConsistent)
        if ejected != 0 && start >= ejected {
            errorsAfter.add(1, ordering: .relaxed)
        } else {
            errorsBefore.add(1, ordering: .relaxed)
        }
    }

    /// What happened, once the phase is over; a kill not yet made is called off.
    func outcome() -> BenchFailover {
        timer.withLock { $0?.cancel() }
        let start = phaseStart.load(ordering: .relaxed)
        let killed = killedAt.load(ordering: .sequentiallyConsistent)
        let ejected = ejectedAt.load(ordering: .sequentiallyConsistent)
        return BenchFailover(replica: kill.index, killedAtNanos: killed == 0 ? nil : killed &- start,
                             ejectedAfterKillNanos: ejected == 0 ? nil : ejected &- killed,
                             errorsBeforeEjection: errorsBefore.load(ordering: .relaxed),
                             errorsAfterEjection: errorsAfter.load(ordering: .relaxed))
    }
}
