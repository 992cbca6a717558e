/// The tail-latency flags of the benchmark clients: where the load goes
/// (several replicas, one of them slow) and the client's policies against
/// slow replicas (hedging, balancing, budgets, ejection, deadlines).
/// `BenchOptions.tail` holds them; `BenchOptions.parse` reads and checks them.
public struct TailOptions: Sendable, Equatable {
    /// Embedded servers to start (`--replicas N`, default 1), each on a port
    /// of its own: the replicas of one set.
    public var replicas = 1
    /// Replicas that answer a share of their requests late (`--slow-replica`).
    public var slowReplicas: [SlowReplica] = []
    /// `--hedge-after`: when a second attempt goes out; nil: no hedging.
    public var hedgeAfter: HedgeDelay?
    /// `--max-hedges N`: extra attempts per request at most; nil: the client's default.
    public var maxHedges: Int?
    /// `--balance`: how requests are spread over the replicas (default round-robin).
    public var balance = Balance.roundRobin
    /// `--retry-budget PCT`: retries at most this percentage of requests; nil: the client's default.
    public var retryBudgetPercent: Double?
    /// `--retry-budget off`: no retry budget at all (retries bounded by the policy's attempts alone).
    public var retryBudgetOff = false
    /// `--retries N`: the default retry policy with N retries (N + 1 attempts); nil: the
    /// default policy when a retry budget is given, else none.
    public var retries: Int?
    /// `--kill-replica K:T`: embedded replica K stops as a killed process T into the measured phase.
    public var killReplica: KillReplica?
    /// `--failing-replica K:STATUS`: embedded replicas that answer every request with a status.
    public var failingReplicas: [FailingReplica] = []
    /// `--eject-after N`: a replica is ejected after N consecutive failures; nil: no ejection.
    public var ejectAfter: Int?
    /// `--deadline DURATION`: each request, retries and hedges included, ends by then; nil: none.
    public var deadline: Duration?

    /// Nothing but one replica, no policy.
    public init() {}

    /// Replica `index` (1-based) answers a `share` of its requests `delay` late.
    public struct SlowReplica: Sendable, Equatable {
        /// Which replica, 1-based (`--slow-replica 2:...` is the second).
        public var index: Int
        /// The share of its requests answered late, in (0, 1].
        public var share: Double
        /// How late.
        public var delay: Duration

        /// Replica `index` (from 1) answers `share` of its requests `delay` late.
        public init(index: Int, share: Double, delay: Duration) {
            self.index = index
            self.share = share
            self.delay = delay
        }
    }

    /// Replica `index` (1-based) stops `after` into the measured phase, as a
    /// killed process does: connections refused, open ones reset.
    public struct KillReplica: Sendable, Equatable {
        /// Which replica, 1-based.
        public var index: Int
        /// When, from the start of the measured phase.
        public var after: Duration

        /// Replica `index` (from 1) killed `after` into the measured phase.
        public init(index: Int, after: Duration) {
            self.index = index
            self.after = after
        }
    }

    /// Replica `index` (1-based) answers every request with `status` and an empty body.
    public struct FailingReplica: Sendable, Equatable {
        /// Which replica, 1-based.
        public var index: Int
        /// The status of every answer, 400 to 599.
        public var status: Int

        /// Replica `index` (from 1) answers `status` to every request.
        public init(index: Int, status: Int) {
            self.index = index
            self.status = status
        }
    }

    /// When a hedge goes out: a fixed delay, or a percentile of the recent latencies.
    public enum HedgeDelay: Sendable, Equatable {
        /// A fixed delay: `--hedge-after 10ms`.
        case after(Duration)
        /// Percent in (0, 100): `p95` is 95.
        case percentile(Double)
    }

    /// How requests are spread over the replicas.
    public enum Balance: String, Sendable, Equatable {
        /// In turn, by the benchmark (every client can).
        case roundRobin = "round-robin"
        /// Power of two choices, by the client's replica set.
        case p2c
    }

    /// The policy flags given (`--hedge-after` ...), for a client to say
    /// which of them it does not apply.
    public var policyFlags: [String] {
        var flags: [String] = []
        if hedgeAfter != nil { flags.append("--hedge-after") }
        if maxHedges != nil { flags.append("--max-hedges") }
        if balance != .roundRobin { flags.append("--balance \(balance.rawValue)") }
        if retryBudgetPercent != nil || retryBudgetOff { flags.append("--retry-budget") }
        if retries != nil { flags.append("--retries") }
        if ejectAfter != nil { flags.append("--eject-after") }
        if deadline != nil { flags.append("--deadline") }
        return flags
    }

    /// Nanoseconds of a duration (saturating).
    public static func nanoseconds(_ d: Duration) -> UInt64 {
        let (s, atto) = d.components
        guard s >= 0 else { return 0 }
        let (ns, overflow) = UInt64(s).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : ns &+ UInt64(atto / 1_000_000_000)
    }
}

extension TailOptions {
    typealias ParseError = BenchOptions.ParseError

    /// `50ms`, `1.5s`, `250us` (or `µs`), `800ns`: a duration > 0 and at
    /// most an hour; a bare number is an error (its unit would be a guess).
    static func duration(_ s: String, flag: String) throws(ParseError) -> Duration {
        let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
        for (unit, scale) in units where s.hasSuffix(unit) {
            let number = s.dropLast(unit.count)
            guard let v = Double(number), v.isFinite, v > 0, v * scale <= 3.6e12 else { break }
            return .nanoseconds(Int64((v * scale).rounded()))
        }
        throw .message("\(flag): expected a duration > 0 with its unit (800ns, 250us, 50ms, 1.5s) up to 1 h, got '\(s)'")
    }

    /// `5`, `5%` or `0.5`: a percentage in `range`.
    static func percent(_ s: String, flag: String, in range: ClosedRange<Double>) throws(ParseError) -> Double {
        let number = s.hasSuffix("%") ? String(s.dropLast()) : s
        guard let v = Double(number), v.isFinite, range.contains(v) else {
            throw .message("\(flag): expected a percentage from \(fixedPoint(range.lowerBound, 0)) to "
                + "\(fixedPoint(range.upperBound, 0)), got '\(s)'")
        }
        return v
    }

    /// `K:P:DELAY`: replica K (1-based) answers a share P (`0.05` or `5%`) of
    /// its requests DELAY late.
    static func slowReplica(_ s: String) throws(ParseError) -> SlowReplica {
        let flag = "--slow-replica"
        let parts = s.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw .message("\(flag): expected K:P:DELAY (2:0.05:50ms), got '\(s)'") }
        guard let k = Int(parts[0]), k >= 1 else {
            throw .message("\(flag): the replica K is a number from 1, got '\(parts[0])'")
        }
        let share: Double
        if parts[1].hasSuffix("%") {
            share = try percent(parts[1], flag: flag, in: 0...100) / 100
        } else if let v = Double(parts[1]), v.isFinite {
            share = v
        } else {
            throw .message("\(flag): the share P is a fraction (0.05) or a percentage (5%), got '\(parts[1])'")
        }
        guard share > 0 && share <= 1 else {
            throw .message("\(flag): the share P must be above 0 and at most 1 (100%), got '\(parts[1])'")
        }
        let delay = try duration(parts[2], flag: flag)
        guard delay <= .seconds(60) else { throw .message("\(flag): the delay is at most 60s, got '\(parts[2])'") }
        return SlowReplica(index: k, share: share, delay: delay)
    }

    /// `K:T`: replica K (1-based) killed T into the measured phase; T is
    /// seconds (`3`, `2.5`) or a duration with its unit (`500ms`).
    static func killReplica(_ s: String) throws(ParseError) -> KillReplica {
        let flag = "--kill-replica"
        let parts = s.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw .message("\(flag): expected K:T (2:3s), got '\(s)'") }
        guard let k = Int(parts[0]), k >= 1 else {
            throw .message("\(flag): the replica K is a number from 1, got '\(parts[0])'")
        }
        if let seconds = Double(parts[1]) {
            guard seconds.isFinite, seconds >= 0, seconds <= 3600 else {
                throw .message("\(flag): the time T is 0 to 3600 seconds, got '\(parts[1])'")
            }
            return KillReplica(index: k, after: .nanoseconds(Int64((seconds * 1e9).rounded())))
        }
        return KillReplica(index: k, after: try duration(parts[1], flag: flag))
    }

    /// `K:STATUS`: replica K (1-based) answers every request with STATUS (400 to 599).
    static func failingReplica(_ s: String) throws(ParseError) -> FailingReplica {
        let flag = "--failing-replica"
        let parts = s.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw .message("\(flag): expected K:STATUS (2:503), got '\(s)'") }
        guard let k = Int(parts[0]), k >= 1 else {
            throw .message("\(flag): the replica K is a number from 1, got '\(parts[0])'")
        }
        guard let status = Int(parts[1]), (400...599).contains(status) else {
            throw .message("\(flag): the STATUS is a failure status from 400 to 599, got '\(parts[1])'")
        }
        return FailingReplica(index: k, status: status)
    }

    /// Reads one tail flag's value into `self`; false: `flag` is not one.
    mutating func parse(_ flag: String, value: () throws(ParseError) -> String) throws(ParseError) -> Bool {
        switch flag {
        case "--replicas":
            let s = try value()
            guard let n = Int(s), (1...64).contains(n) else {
                throw .message("--replicas: expected a number of embedded servers from 1 to 64, got '\(s)'")
            }
            replicas = n
        case "--slow-replica":
            let slow = try TailOptions.slowReplica(try value())
            guard !slowReplicas.contains(where: { $0.index == slow.index }) else {
                throw .message("--slow-replica: replica \(slow.index) given twice")
            }
            slowReplicas.append(slow)
        case "--hedge-after":
            let s = try value()
            if s.hasPrefix("p") {
                guard let p = Double(s.dropFirst()), p > 0, p < 100 else {
                    throw .message("--hedge-after: expected a percentile p1 to p99.99 (p95) or a duration (10ms), got '\(s)'")
                }
                hedgeAfter = .percentile(p)
            } else {
                hedgeAfter = .after(try TailOptions.duration(s, flag: flag))
            }
        case "--max-hedges":
            let s = try value()
            guard let n = Int(s), (1...16).contains(n) else {
                throw .message("--max-hedges: expected extra attempts per request from 1 to 16, got '\(s)'")
            }
            maxHedges = n
        case "--balance":
            let s = try value()
            guard let b = Balance(rawValue: s) else { throw .message("--balance: expected round-robin or p2c, got '\(s)'") }
            balance = b
        case "--retry-budget":
            let s = try value()
            if s == "off" {
                retryBudgetOff = true
                retryBudgetPercent = nil
            } else {
                retryBudgetPercent = try TailOptions.percent(s, flag: flag, in: 0...100)
                retryBudgetOff = false
            }
        case "--retries":
            let s = try value()
            guard let n = Int(s), (0...10).contains(n) else {
                throw .message("--retries: expected retries per request from 0 to 10, got '\(s)'")
            }
            retries = n
        case "--kill-replica":
            killReplica = try TailOptions.killReplica(try value())
        case "--failing-replica":
            let failing = try TailOptions.failingReplica(try value())
            guard !failingReplicas.contains(where: { $0.index == failing.index }) else {
                throw .message("--failing-replica: replica \(failing.index) given twice")
            }
            failingReplicas.append(failing)
        case "--eject-after":
            let s = try value()
            guard let n = Int(s), n >= 1 else {
                throw .message("--eject-after: expected consecutive failures >= 1, got '\(s)'")
            }
            ejectAfter = n
        case "--deadline":
            deadline = try TailOptions.duration(try value(), flag: flag)
        default:
            return false
        }
        return true
    }

    /// The checks between flags, once all are read: `urls` are `--url`'s.
    func validate(urls: [String]) throws(ParseError) {
        if !urls.isEmpty && replicas > 1 {
            throw .message("--replicas starts embedded servers; against real servers give --url once per replica")
        }
        if !urls.isEmpty && !slowReplicas.isEmpty {
            throw .message("--slow-replica slows an embedded replica; with --url, put a delaying proxy in front of one "
                + "(scripts/bench-tail.sh)")
        }
        if !urls.isEmpty && (killReplica != nil || !failingReplicas.isEmpty) {
            throw .message("--kill-replica and --failing-replica act on embedded replicas (--replicas N), not on --url")
        }
        let indexes = slowReplicas.map { ("--slow-replica", $0.index) } + failingReplicas.map { ("--failing-replica", $0.index) }
            + (killReplica.map { [("--kill-replica", $0.index)] } ?? [])
        for (flag, index) in indexes where index > replicas {
            throw .message("\(flag) \(index): there \(replicas == 1 ? "is 1 replica" : "are \(replicas) replicas")"
                + " (--replicas N)")
        }
        if maxHedges != nil && hedgeAfter == nil { throw .message("--max-hedges needs --hedge-after") }
    }
}
