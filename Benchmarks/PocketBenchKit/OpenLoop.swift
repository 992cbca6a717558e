/// When each request of a fixed-rate (open-loop) phase is due, and how late
/// an answer is: pure arithmetic on nanosecond timestamps, so the clock is
/// the caller's (a fake one in tests).
///
/// Request `i` is due at `start + i / rate`, whatever the earlier answers
/// did. Its latency runs from that due time, not from the moment a task
/// got round to sending it: when the server stalls, the requests that a
/// real caller would have sent meanwhile wait too, and their wait is part
/// of their latency (the correction for coordinated omission that wrk2
/// makes). A closed loop (send, wait, send) never sends those requests and
/// records the stall once.
///
/// The phase offers `offered` requests. One whose turn comes after the
/// send window closes (the last due time plus `grace`) is offered but not
/// sent: every task was still busy, which is what saturation looks like.
public struct OpenLoopSchedule: Sendable, Equatable {
    /// The phase's first due time (monotonic ns).
    public let start: UInt64
    /// Nanoseconds between two due times (1e9 / rate).
    public let intervalNanos: Double
    /// Requests the phase offers (rate x duration).
    public let offered: Int
    /// How long after the last due time a request may still start (10 ms by
    /// default: a timer's lateness at the very end is not saturation).
    public let grace: UInt64

    /// `offered` requests at `rate` per second from `start`.
    public init(start: UInt64, rate: Double, offered: Int, grace: UInt64 = 10_000_000) {
        precondition(rate > 0 && offered >= 0)
        self.start = start
        self.intervalNanos = 1e9 / rate
        self.offered = offered
        self.grace = grace
    }

    /// When request `ticket` is due.
    public func due(_ ticket: Int) -> UInt64 {
        start &+ UInt64((Double(ticket) * intervalNanos).rounded(.down))
    }

    /// When the send window closes: the time after which no request starts.
    public var closes: UInt64 { due(max(offered - 1, 0)) &+ grace }

    /// When request `ticket` goes out, taken by a task free at `now`: at
    /// its due time, or at once when that has passed; nil when it is not
    /// sent (beyond the phase, or the window closes first).
    public func sendTime(_ ticket: Int, freeAt now: UInt64) -> UInt64? {
        guard ticket < offered else { return nil }
        let at = max(now, due(ticket))
        return at <= closes ? at : nil
    }

    /// The latency of request `ticket` answered at `now`: from its due time
    /// (at least 1 ns).
    public func latency(_ ticket: Int, answeredAt now: UInt64) -> UInt64 {
        let due = due(ticket)
        return now > due ? now - due : 1
    }

    /// The requests offered by `rate` per second over `seconds`.
    public static func offered(rate: Double, seconds: Double) -> Int {
        max(1, Int((rate * seconds).rounded(.down)))
    }
}

/// Sends the requests of `schedule` as they fall due, until a ticket is past
/// the phase or its window has closed: one of the phase's tasks (each holds
/// one request at a time, so the tasks bound the requests in flight).
func runOpenLoopTask<C: BenchClient>(_ client: C, phase: BenchPhase, schedule: OpenLoopSchedule) async -> BenchTally {
    var tally = BenchTally()
    while true {
        let ticket = phase.tickets.wrappingAdd(1, ordering: .relaxed).oldValue
        if ticket >= schedule.offered { break }
        let now = monotonicNanos()
        guard let at = schedule.sendTime(ticket, freeAt: now) else { break }
        if at > now { try? await Task.sleep(nanoseconds: at - now) }
        var sample = BenchPhase.failed
        let made = monotonicNanos()
        let end: UInt64
        do {
            let outcome = try await client.perform()
            end = monotonicNanos()
            sample = schedule.latency(ticket, answeredAt: end)
            tally.count(outcome)
        } catch {
            end = monotonicNanos()
            tally.count(error)
        }
        if end > made { tally.longestCallNanos = max(tally.longestCallNanos, end - made) }
        phase.record(ticket, sample)
    }
    return tally
}

/// Runs a fixed-rate phase: `connections` tasks take the requests of
/// `schedule` in turn (see `OpenLoopSchedule`). The tally's `requests` are
/// the requests sent.
public func runOpenLoopPhase<C: BenchClient>(_ client: C, phase: BenchPhase, schedule: OpenLoopSchedule,
                                             connections: Int, executor: (any TaskExecutor)? = nil) async -> BenchTally {
    await withTaskGroup(of: BenchTally.self, returning: BenchTally.self) { group in
        for _ in 0..<connections {
            if let executor {
                group.addTask(executorPreference: executor) { await runOpenLoopTask(client, phase: phase, schedule: schedule) }
            } else {
                group.addTask { await runOpenLoopTask(client, phase: phase, schedule: schedule) }
            }
        }
        var total = BenchTally()
        for await t in group { total.add(t) }
        return total
    }
}
