#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPocketBenchCount
import Histogram
import Synchronization

/// What the tasks of one phase share: the ticket counter that hands out
/// request numbers, the stop conditions and the latency counts.
///
/// Latencies are counted as they come, into log-linear buckets shared by
/// every task (a relaxed atomic add per request, no allocation): values
/// below 2,048 ns each have their own, above that each power of two is
/// split into 1,024, which is the bucketing of an HDR histogram with three
/// significant digits, so `histogram()` loses nothing. The buckets take at
/// most 272 KiB however many requests and connections the phase has, and
/// only those touched are resident: a benchmark's memory stays the client's.
public final class BenchPhase: @unchecked Sendable {
    // Invariant: `counts` is written only through pkbc_count_add (atomic)
    // while the phase runs, and read only after every task has finished.
    let tickets = Atomic<Int>(0)
    let limit: Int
    /// When the phase stops drawing tickets (monotonic ns); `.max` by default
    /// (no deadline). Set it before the phase's tasks start.
    public var deadline: UInt64
    let counts: UnsafeMutablePointer<UInt64>?

    /// Sub-buckets per power of two (3 significant digits: 2 × 1,024 > 2 × 10³).
    static let subBuckets = 1024
    /// The largest latency counted (1 h); longer ones count as 1 h.
    static let highest: UInt64 = 3_600_000_000_000
    /// Buckets up to `highest`.
    static let bucketCount = bucket(for: highest) + 1

    /// A phase of at most `limit` requests; `recordsLatencies` false for
    /// warmups (nothing counted).
    public init(limit: Int, deadline: UInt64 = .max, recordsLatencies: Bool) {
        self.limit = limit
        self.deadline = deadline
        if recordsLatencies {
            // calloc: the zeroed pages are faulted in by the first count that lands on them.
            counts = calloc(BenchPhase.bucketCount, MemoryLayout<UInt64>.stride)?
                .bindMemory(to: UInt64.self, capacity: BenchPhase.bucketCount)
        } else {
            counts = nil
        }
    }

    deinit { free(counts) }

    /// The bucket of `ns`: below 2 × subBuckets the value itself; above,
    /// `subBuckets` per power of two.
    @inline(__always)
    static func bucket(for ns: UInt64) -> Int {
        let v = min(ns, highest)
        let shift = max(0, (63 - v.leadingZeroBitCount) - 10)
        return subBuckets * shift + Int(truncatingIfNeeded: v >> UInt64(shift))
    }

    /// The lowest value of bucket `i` (the inverse of `bucket(for:)`).
    static func lowestValue(ofBucket i: Int) -> UInt64 {
        if i < 2 * subBuckets { return UInt64(i) }
        let shift = i / subBuckets - 1
        return UInt64(i - subBuckets * shift) << UInt64(shift)
    }

    /// Counts one successful request's latency (ns). Any task, any thread.
    @inline(__always)
    func record(_ ns: UInt64) {
        guard let counts else { return }
        pkbc_count_add(counts, BenchPhase.bucket(for: ns))
    }

    /// The sample value of a request that failed: not counted.
    static let failed = UInt64.max

    /// Counts request `ticket`'s latency (`failed` for one that threw: not
    /// counted). Every loop, closed or open, records through this.
    @inline(__always)
    func record(_ ticket: Int, _ sample: UInt64) {
        if sample != BenchPhase.failed { record(sample) }
    }

    /// The latencies (ns) of the successful requests, in an HDR histogram
    /// (1 ns to 1 h, 3 significant digits). Allocates; call after the phase.
    public func histogram() -> Histogram<UInt64> {
        var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: BenchPhase.highest,
                                  numberOfSignificantValueDigits: .three)
        guard let counts else { return h }
        for i in 0..<BenchPhase.bucketCount where counts[i] != 0 {
            _ = h.record(max(BenchPhase.lowestValue(ofBucket: i), 1), count: counts[i])
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
    /// The longest call, answered or failed, from the moment it was made
    /// (not from its due time) to its end, in nanoseconds: fixed-rate
    /// phases only (0 otherwise). What a deadline must bound.
    public var longestCallNanos: UInt64 = 0

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
        longestCallNanos = max(longestCallNanos, o.longestCallNanos)
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
