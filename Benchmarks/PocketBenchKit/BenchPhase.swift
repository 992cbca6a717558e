import Histogram
import Synchronization

/// What the tasks of one phase share: the ticket counter that hands out
/// request numbers, the stop conditions and the latency slots.
///
/// Latencies go into one buffer preallocated (and touched) before the
/// measured phase: request number `t` writes slot `t % capacity`, so a
/// request costs the bench no allocation, and no merge is needed at the end.
/// With more requests than `capacity` the slots keep the most recent ones.
/// After the phase the slots go into an HDR histogram (`histogram(count:)`).
public final class BenchPhase: @unchecked Sendable {
    // Invariant: each slot is written only by the task that drew its ticket,
    // and read only after every task of the phase has finished.
    let tickets = Atomic<Int>(0)
    let limit: Int
    /// When the phase stops drawing tickets (monotonic ns); `.max` by default
    /// (no deadline). Set it before the phase's tasks start.
    public var deadline: UInt64
    let samples: UnsafeMutablePointer<UInt64>?
    let capacity: Int

    /// The sample value of a request that failed.
    static let failed = UInt64.max

    /// A phase of at most `limit` requests, recording up to `sampleCapacity`
    /// latencies (0: none, for warmups).
    public init(limit: Int, deadline: UInt64 = .max, sampleCapacity: Int) {
        self.limit = limit
        self.deadline = deadline
        if sampleCapacity > 0 {
            let p = UnsafeMutablePointer<UInt64>.allocate(capacity: sampleCapacity)
            p.initialize(repeating: BenchPhase.failed, count: sampleCapacity) // faults the pages in now
            samples = p
        } else {
            samples = nil
        }
        capacity = sampleCapacity
    }

    deinit { samples?.deallocate() }

    /// Keeps the latency of request `ticket` (`failed` for one that threw).
    @inline(__always)
    func record(_ ticket: Int, _ sample: UInt64) {
        if let samples { samples[ticket % capacity] = sample }
    }

    /// The latencies (ns) of the successful requests among the first `count`
    /// slots, in an HDR histogram (1 ns to 1 h, 3 significant digits).
    /// Allocates; call after the phase.
    public func histogram(count: Int) -> Histogram<UInt64> {
        var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000,
                                  numberOfSignificantValueDigits: .three)
        guard let samples else { return h }
        for i in 0..<min(count, capacity) where samples[i] != BenchPhase.failed {
            _ = h.record(max(samples[i], 1))
        }
        return h
    }
}

/// The outcome of one benchmark request, as the tally needs it.
public struct BenchOutcome: Sendable {
    /// The response's status code.
    public var status: Int
    /// Body bytes received (or sent, for uploads).
    public var bytes: Int
    /// The request ran on a kept-alive connection; nil: the client cannot tell.
    public var reused: Bool?
    /// A new TLS connection resumed an earlier session.
    public var tlsResumed: Bool

    /// An outcome; `reused` nil and `tlsResumed` false by default, for
    /// clients that cannot tell (their report then has no connection count).
    public init(status: Int, bytes: Int, reused: Bool? = nil, tlsResumed: Bool = false) {
        self.status = status
        self.bytes = bytes
        self.reused = reused
        self.tlsResumed = tlsResumed
    }
}

/// One benchmark client: sends one request and waits for its whole response.
/// Pocket, AsyncHTTPClient and URLSession each implement it, so every client
/// is measured by the same loop and reported in the same format.
public protocol BenchClient: Sendable {
    /// Sends one request; throws on a transport or protocol error.
    func perform() async throws -> BenchOutcome
}

/// One task's tally, or a phase's sum of them (all zero to start).
public struct BenchTally: Sendable {
    /// Requests finished (successful or not).
    public var requests = 0
    /// Requests that threw.
    public var errors = 0
    /// Responses with a status outside 200...399.
    public var badStatus = 0
    /// Body bytes (see `BenchOutcome.bytes`).
    public var bytes = 0
    /// Requests that opened a connection.
    public var newConnections = 0
    /// Requests whose client could not tell whether they opened one.
    public var connectionUnknown = 0
    /// New TLS connections that resumed a session.
    public var tlsResumed = 0
    /// The first error, as text.
    public var firstError: String?

    /// An empty tally.
    public init() {}

    /// Counts one request answered with `outcome`.
    @inline(__always)
    mutating func count(_ outcome: BenchOutcome) {
        requests += 1
        bytes &+= outcome.bytes
        switch outcome.reused {
        case false?: newConnections += 1
        case nil: connectionUnknown += 1
        case true?: break
        }
        if outcome.tlsResumed { tlsResumed += 1 }
        if outcome.status < 200 || outcome.status > 399 { badStatus += 1 }
    }

    /// Counts one request that threw `error`.
    mutating func count(_ error: any Error) {
        requests += 1
        errors += 1
        if firstError == nil { firstError = String(describing: error) }
    }

    mutating func add(_ o: BenchTally) {
        requests += o.requests
        errors += o.errors
        badStatus += o.badStatus
        bytes += o.bytes
        newConnections += o.newConnections
        connectionUnknown += o.connectionUnknown
        tlsResumed += o.tlsResumed
        if firstError == nil { firstError = o.firstError }
    }
}

/// Sends requests back to back until the phase's tickets or time run out.
func runTask<C: BenchClient>(_ client: C, phase: BenchPhase) async -> BenchTally {
    var tally = BenchTally()
    var now = monotonicNanos()
    while now < phase.deadline {
        let ticket = phase.tickets.wrappingAdd(1, ordering: .relaxed).oldValue
        if ticket >= phase.limit { break }
        let start = monotonicNanos()
        var sample = BenchPhase.failed
        do {
            let outcome = try await client.perform()
            now = monotonicNanos()
            sample = now &- start
            tally.count(outcome)
        } catch {
            now = monotonicNanos()
            tally.count(error)
        }
        phase.record(ticket, sample)
    }
    return tally
}

/// Runs one phase with `connections` concurrent tasks, on `executor` when
/// given (task executor preference) or else on the global executor.
public func runPhase<C: BenchClient>(_ client: C, phase: BenchPhase, connections: Int,
                                     executor: (any TaskExecutor)? = nil) async -> BenchTally {
    await withTaskGroup(of: BenchTally.self, returning: BenchTally.self) { group in
        for _ in 0..<connections {
            if let executor {
                group.addTask(executorPreference: executor) { await runTask(client, phase: phase) }
            } else {
                group.addTask { await runTask(client, phase: phase) }
            }
        }
        var total = BenchTally()
        for await t in group { total.add(t) }
        return total
    }
}
