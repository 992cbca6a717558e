/// What a measured run needs besides the client: where it goes and the
/// optional probes a client can offer.
public struct MeasureSetup: Sendable {
    /// The client's name in the report (`"pocket"`, `"ahc"`, `"urlsession"`).
    public var clientName: String
    /// The scenario's name, or nil.
    public var scenario: String?
    /// The URL loaded (the first replica's).
    public var url: String
    /// The replicas the requests went to (URLs, or embedded servers).
    public var replicas = 1
    /// The server runs in this process (its CPU is then subtracted for `client_cpu_us_per_req`).
    public var embedded = false
    /// CPU time of the in-process server's threads (ns), when `embedded`.
    public var serverCPUNanos: (@Sendable () -> UInt64)?
    /// An allocation counter of the client's own (Pocket's engine), or nil.
    public var engineAllocations: (@Sendable () -> UInt64)?
    /// Executor for the request tasks (Pocket's `--on-loop`), nil: the global one.
    public var executor: (any TaskExecutor)?
    /// Event-loop threads of the client, for the report.
    public var engineThreads = 1
    /// The client's whole request path was engaged (`--pipeline`), for the report.
    public var pipeline = false
    /// How the client writes to sockets (Pocket's `epoll` or `io_uring`), for the report; nil for others.
    public var ioBackend: String?
    /// Versions for the report besides Swift's (`["pocket": "0.1"]`).
    public var versions: [String: String] = [:]
    /// Counts the measured phase's user-space instructions (`pocket-bench --count`), or nil.
    public var instructions: InstructionCounter?
    /// The client's hedges and ejections so far, read before and after the
    /// measured phase (for `hedges_fired`, `hedges_won`, `ejections`), or nil.
    public var tailCounts: (@Sendable () -> BenchTailCounts)?
    /// How the client spreads the requests over the replicas when it does
    /// (`"power of two choices"`), for the report; nil: in turn, by the benchmark.
    public var balancing: String?
    /// Called as the measured phase starts, with its start (monotonic ns):
    /// where a fault due during the phase (`--kill-replica`) is timed from; nil: nothing.
    public var measuredPhaseStarts: (@Sendable (UInt64) -> Void)?
    /// The requests the servers have received so far, retries and hedges
    /// included (the embedded replicas' count), read before and after the
    /// measured phase for `server_requests`; nil: unknown (real servers).
    public var serverRequests: (@Sendable () -> Int)?
    /// What a replica killed during the phase led to (`--kill-replica`),
    /// read after it; nil: no replica is killed.
    public var failover: (@Sendable () -> BenchFailover)?

    /// A setup with no probes, the global executor and one engine thread.
    public init(clientName: String, scenario: String? = nil, url: String) {
        self.clientName = clientName
        self.scenario = scenario
        self.url = url
    }
}

/// A finished run: the report of the measured phase and the warmup's tally.
public struct BenchMeasurement: Sendable {
    /// The measured phase.
    public var report: BenchReport
    /// The warmup phase's tally (not measured).
    public var warmup: BenchTally

    /// The first error of the measured phase or, failing that, the warmup's.
    public var firstError: String? { report.tally.firstError ?? warmup.firstError }

    /// True when requests ran and every one of them failed (the run measured nothing).
    public var allFailed: Bool {
        let t = report.tally
        if t.requests > 0 { return t.errors == t.requests }
        return warmup.requests > 0 && warmup.errors == warmup.requests
    }
}

extension BenchOptions {
    /// The requests a fixed-rate phase offers: `--requests` when given,
    /// else rate x `--max-seconds` (10 s without it), the smaller when both
    /// are given; nil without `--rate`.
    public var offered: Int? {
        guard let rate else { return nil }
        let timed = OpenLoopSchedule.offered(rate: rate, seconds: maxSeconds ?? 10)
        if requestsGiven { return maxSeconds == nil ? requests : min(requests, timed) }
        return timed
    }
}

/// Runs `options.effectiveWarmup` unmeasured requests, then the measured
/// phase (`options.requests`, or until `options.maxSeconds`; with
/// `options.rate`, the `offered` requests at that rate), each with
/// `options.connections` concurrent tasks, and reports the measured phase:
/// CPU from getrusage, latencies in an HDR histogram.
public func measure<C: BenchClient>(_ client: C, options: BenchOptions, setup: MeasureSetup) async -> BenchMeasurement {
    let warmup = BenchPhase(limit: options.effectiveWarmup, recordsLatencies: false)
    let warmTally = await runPhase(client, phase: warmup, connections: options.connections, executor: setup.executor)

    let offered = options.offered
    let measured = BenchPhase(limit: offered ?? options.requests, recordsLatencies: true)
    let mallocCounter = MallocCounter()

    let tail0 = setup.tailCounts?()
    let served0 = setup.serverRequests?()
    let heap0 = mallocCounter.count()
    let engine0 = setup.engineAllocations?()
    let server0 = setup.serverCPUNanos?() ?? 0
    let cpu0 = processCPUNanos()
    setup.instructions?.start()
    let t0 = monotonicNanos()
    if let s = options.maxSeconds { measured.deadline = t0 &+ UInt64(s * 1e9) }
    setup.measuredPhaseStarts?(t0)
    let tally = if let rounds = options.soakRounds {
        await soak(client, rounds: rounds, options: options, setup: setup)
    } else if let rate = options.rate, let offered {
        await runOpenLoopPhase(client, phase: measured, schedule: OpenLoopSchedule(start: t0, rate: rate, offered: offered),
                               connections: options.connections, executor: setup.executor)
    } else {
        await runPhase(client, phase: measured, connections: options.connections, executor: setup.executor)
    }
    let t1 = monotonicNanos()
    setup.instructions?.stop(label: setup.scenario ?? setup.clientName)
    let cpu1 = processCPUNanos()
    let server1 = setup.serverCPUNanos?() ?? 0
    let engine1 = setup.engineAllocations?()
    let heap1 = mallocCounter.count()
    let instructions = setup.instructions?.count() // reads a file: after heap1
    let tail1 = setup.tailCounts?()
    let served1 = setup.serverRequests?()

    var report = BenchReport(
        client: setup.clientName,
        scenario: setup.scenario,
        url: setup.url,
        replicas: max(setup.replicas, 1),
        rate: options.rate,
        offered: offered,
        embedded: setup.embedded,
        connections: options.connections,
        engineThreads: setup.engineThreads,
        onLoop: setup.executor != nil,
        pipeline: setup.pipeline,
        ioBackend: setup.ioBackend,
        warmup: options.effectiveWarmup,
        tally: tally,
        elapsedNanos: t1 &- t0,
        latencies: measured.histogram(),
        cpuNanos: cpu1 &- cpu0,
        serverCPUNanos: server1 &- server0,
        engineAllocations: engine0.flatMap { e0 in engine1.map { $0 &- e0 } },
        heapAllocations: heap0.flatMap { h0 in heap1.map { $0 &- h0 } },
        userInstructions: instructions,
        versions: setup.versions.merging(["swift": MachineInfo.swiftVersion]) { mine, _ in mine }
    )
    report.balancing = setup.balancing
    report.serverRequests = served0.flatMap { s0 in served1.map { $0 - s0 } }
    report.failover = setup.failover?()
    if let tail0, let tail1 {
        report.hedgesFired = tail1.hedgesFired - tail0.hedgesFired
        report.hedgesWon = tail1.hedgesWon - tail0.hedgesWon
        report.ejections = tail1.ejections - tail0.ejections
    }
    return BenchMeasurement(report: report, warmup: warmTally)
}

/// A client's counts of its tail-latency policies' work, as totals so far.
public struct BenchTailCounts: Sendable, Equatable {
    /// Hedges sent.
    public var hedgesFired: Int
    /// Hedges whose answer was the one used.
    public var hedgesWon: Int
    /// Replicas ejected.
    public var ejections: Int

    public init(hedgesFired: Int = 0, hedgesWon: Int = 0, ejections: Int = 0) {
        self.hedgesFired = hedgesFired
        self.hedgesWon = hedgesWon
        self.ejections = ejections
    }
}

/// What a replica killed during the measured phase led to (`--kill-replica`).
/// A failed request counts after the ejection when it started at or after
/// the first ejection that followed the kill: by then the client knew.
public struct BenchFailover: Sendable, Equatable {
    /// The replica killed, 1-based.
    public var replica: Int
    /// When it was killed, from the start of the measured phase; nil: the phase ended first.
    public var killedAtNanos: UInt64?
    /// From the kill to the first ejection of that replica; nil: it was not ejected.
    public var ejectedAfterKillNanos: UInt64?
    /// Failed requests that started before that ejection (all of them without one).
    public var errorsBeforeEjection: Int
    /// Failed requests that started at or after it.
    public var errorsAfterEjection: Int

    public init(replica: Int, killedAtNanos: UInt64? = nil, ejectedAfterKillNanos: UInt64? = nil,
                errorsBeforeEjection: Int = 0, errorsAfterEjection: Int = 0) {
        self.replica = replica
        self.killedAtNanos = killedAtNanos
        self.ejectedAfterKillNanos = ejectedAfterKillNanos
        self.errorsBeforeEjection = errorsBeforeEjection
        self.errorsAfterEjection = errorsAfterEjection
    }
}
