import Pocket
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the tasks of one phase share: the ticket counter that hands out
/// request numbers, the stop conditions and the latency slots.
///
/// Latencies go into one buffer preallocated (and touched) before the
/// measured phase: request number `t` writes slot `t % capacity`, so a
/// request costs the bench no allocation, and no merge is needed at the end
/// (it is the per-task arrays of the classic design laid end to end). With
/// more requests than `capacity` the slots keep the most recent ones.
final class Phase: @unchecked Sendable {
    // Invariant: each slot is written only by the task that drew its ticket,
    // and read only after every task of the phase has finished.
    let tickets = Atomic<Int>(0)
    let limit: Int
    // Set before the phase's tasks start (task creation orders it before their reads).
    var deadline: UInt64
    let samples: UnsafeMutablePointer<UInt64>?
    let capacity: Int

    /// The sample value of a request that failed.
    static let failed = UInt64.max

    init(limit: Int, deadline: UInt64, sampleCapacity: Int) {
        self.limit = limit
        self.deadline = deadline
        if sampleCapacity > 0 {
            let p = UnsafeMutablePointer<UInt64>.allocate(capacity: sampleCapacity)
            p.initialize(repeating: Phase.failed, count: sampleCapacity) // faults the pages in now
            samples = p
        } else {
            samples = nil
        }
        capacity = sampleCapacity
    }

    deinit { samples?.deallocate() }

    /// Latencies of the successful requests, sorted (allocates; call after the phase).
    func sortedLatencies(count: Int) -> [UInt64] {
        guard let samples else { return [] }
        let n = min(count, capacity)
        var out = [UInt64]()
        out.reserveCapacity(n)
        for i in 0..<n where samples[i] != Phase.failed { out.append(samples[i]) }
        out.sort()
        return out
    }
}

/// One task's tally.
struct Tally: Sendable {
    var requests = 0
    var errors = 0
    var badStatus = 0
    var bytes = 0
    var newConnections = 0
    var tlsResumed = 0
    var firstError: String?

    mutating func add(_ o: Tally) {
        requests += o.requests
        errors += o.errors
        badStatus += o.badStatus
        bytes += o.bytes
        newConnections += o.newConnections
        tlsResumed += o.tlsResumed
        if firstError == nil { firstError = o.firstError }
    }
}

/// Sends requests back to back until the phase's tickets or time run out.
func runTask(client: PocketClient, request: Request, phase: Phase, transfer: Transfer, uploadBytes: Int) async -> Tally {
    var tally = Tally()
    let samples = phase.samples
    let capacity = phase.capacity
    var now = monotonicNanos()
    while now < phase.deadline {
        let ticket = phase.tickets.wrappingAdd(1, ordering: .relaxed).oldValue
        if ticket >= phase.limit { break }
        let start = monotonicNanos()
        var sample = Phase.failed
        do {
            let response = try await perform(client, request, transfer, uploadBytes: uploadBytes)
            now = monotonicNanos()
            sample = now &- start
            tally.bytes &+= response.bytes
            if !response.reused { tally.newConnections += 1 }
            if response.tlsResumed { tally.tlsResumed += 1 }
            if response.status < 200 || response.status > 399 { tally.badStatus += 1 }
        } catch {
            now = monotonicNanos()
            tally.errors += 1
            if tally.firstError == nil { tally.firstError = String(describing: error) }
        }
        tally.requests += 1
        if let samples { samples[ticket % capacity] = sample }
    }
    return tally
}

/// Runs one phase with `connections` concurrent tasks.
func runPhase(client: PocketClient, request: Request, phase: Phase, connections: Int, onLoop: Bool,
              transfer: Transfer = .memory, uploadBytes: Int = 0) async -> Tally {
    await withTaskGroup(of: Tally.self, returning: Tally.self) { group in
        for _ in 0..<connections {
            if onLoop {
                group.addTask(executorPreference: client.executor) {
                    await runTask(client: client, request: request, phase: phase, transfer: transfer, uploadBytes: uploadBytes)
                }
            } else {
                group.addTask {
                    await runTask(client: client, request: request, phase: phase, transfer: transfer, uploadBytes: uploadBytes)
                }
            }
        }
        var total = Tally()
        for await t in group { total.add(t) }
        return total
    }
}
