/// The mutable state of one `PocketReplicaSet`, a pure value: every method
/// takes the time (nanoseconds of the set's clock) and returns what
/// happened, so tests drive it with a fake clock and a seeded generator,
/// and the set runs it under its lock and reports events after.
struct ReplicaSetState {
    /// One replica and what the set knows of it.
    struct Replica {
        var endpoint: PocketReplicaEndpoint
        var outstanding = 0
        var latency: PeakEWMA
        var health = ReplicaHealth()
        var requests: UInt64 = 0
        var failures: UInt64 = 0
        var ejections: UInt64 = 0
    }

    /// The endpoint of the replica at `index` (only it copied, not the replica).
    func endpoint(at index: Int) -> PocketReplicaEndpoint {
        replicas.withUnsafeBufferPointer { $0[index].endpoint }
    }

    /// What `choose` decided.
    enum Choice: Equatable {
        /// Send to this replica; `probe`: it is the half-open breaker's probe.
        case replica(index: Int, probe: Bool)
        /// Every replica is ejected; the first is due back after this long.
        case circuitOpen(ejected: Int, dueIn: Duration)
        /// The set has no replicas.
        case empty
    }

    let balancing: PocketBalancing
    let ejection: PocketOutlierEjection?
    private(set) var replicas: [Replica] = []
    /// Bumped when the list changes: a lease from an older list is matched by endpoint.
    private(set) var generation = 0
    /// Whether a list was ever given (a discovered set starts without one).
    private(set) var populated = false
    private var cursor = 0
    private var generator: SplitMix64
    private let decay: Duration
    /// The ejection policy's window in nanoseconds, read on every outcome.
    private let ejectionWindow: Int64

    init(balancing: PocketBalancing, ejection: PocketOutlierEjection?, seed: UInt64) {
        self.balancing = balancing
        self.ejection = ejection
        generator = SplitMix64(seed: seed)
        if case .powerOfTwoChoices(let d) = balancing { decay = d } else { decay = .seconds(10) }
        ejectionWindow = ejection?.window.nanoseconds ?? .max
    }

    /// Replaces the list: replicas that stay keep their state (load,
    /// latency, breaker), new ones start fresh, removed ones are dropped.
    /// Returns whether it changed.
    @discardableResult
    mutating func replace(with endpoints: [PocketReplicaEndpoint]) -> Bool {
        populated = true
        var seen = Set<PocketReplicaEndpoint>()
        let unique = endpoints.filter { seen.insert($0).inserted }
        guard unique != replicas.map(\.endpoint) else { return false }
        let old = Dictionary(replicas.map { ($0.endpoint, $0) }, uniquingKeysWith: { a, _ in a })
        replicas = unique.map { old[$0] ?? Replica(endpoint: $0, latency: PeakEWMA(decay: decay)) }
        generation += 1
        cursor = 0
        return true
    }

    /// The replica for the next request at `now`, preferring those not in
    /// `used` (the places in the list this request already tried: bit i for
    /// replica i, `ReplicaHistory`). A half-open replica due back is chosen
    /// first, as the probe; then the balancer chooses among the replicas in
    /// rotation; with none left the circuit is open. The choice is counted
    /// outstanding until `finish`. Allocates nothing.
    mutating func choose(at now: Int64, avoiding used: UInt64 = 0) -> Choice {
        guard !replicas.isEmpty else { return .empty }
        if ejection != nil, let due = replicas.indices.first(where: { replicas[$0].health.isDue(at: now) }) {
            replicas[due].health.beginProbe()
            replicas[due].outstanding += 1
            return .replica(index: due, probe: true)
        }
        // The pool: the replicas not ejected, only those not used yet when
        // there are any.
        var candidates = 0, fresh = 0
        for i in replicas.indices where !replicas[i].health.isOut {
            candidates += 1
            if !ReplicaHistory.contains(used, i) { fresh += 1 }
        }
        if candidates == 0 {
            let next = replicas.compactMap(\.health.ejectedUntil).min() ?? now
            return .circuitOpen(ejected: replicas.count, dueIn: .nanoseconds(max(0, next - now)))
        }
        let freshOnly = fresh > 0
        /// The place in the list of the pool's n-th member, in list order.
        func member(_ n: Int) -> Int {
            var left = n
            for i in replicas.indices where !replicas[i].health.isOut && !(freshOnly && ReplicaHistory.contains(used, i)) {
                if left == 0 { return i }
                left -= 1
            }
            preconditionFailure("the pool has \(freshOnly ? fresh : candidates) members")
        }
        /// What power of two choices compares of the pool's n-th member
        /// (its latency decayed to now).
        func candidate(_ n: Int) -> ReplicaChoice.Candidate {
            let i = member(n)
            return ReplicaChoice.Candidate(index: i, outstanding: replicas[i].outstanding,
                                           latency: replicas[i].latency.value(at: now))
        }
        let count = freshOnly ? fresh : candidates
        let index: Int
        switch balancing {
        case .powerOfTwoChoices:
            index = ReplicaChoice.powerOfTwo(count: count, index: member, candidate, using: &generator)
        case .roundRobin:
            index = ReplicaChoice.roundRobin(count: count, index: member, cursor: cursor)
            cursor = (index + 1) % replicas.count
        }
        replicas[index].outstanding += 1
        return .replica(index: index, probe: false)
    }

    /// `choose(at:avoiding:)` avoiding the places of `endpoints`.
    mutating func choose(at now: Int64, avoiding endpoints: [PocketReplicaEndpoint]) -> Choice {
        var used: UInt64 = 0
        for (i, r) in replicas.enumerated() where endpoints.contains(r.endpoint) { used = ReplicaHistory.adding(i, to: used) }
        return choose(at: now, avoiding: used)
    }

    /// What `finish` reports to the set's observers.
    enum Change: Equatable {
        case none
        case ejected(PocketReplicaEndpoint, for: Duration)
        case restored(PocketReplicaEndpoint)
    }

    /// The end of a request sent to `endpoint` (chosen from list
    /// `generation` at `index`): no longer outstanding; its latency added
    /// (when it has an outcome); the breaker told of a success or failure
    /// (nil: cancelled, neither).
    mutating func finish(_ endpoint: PocketReplicaEndpoint, index: Int, generation chosenFrom: Int, failure: Bool?,
                         latency: Duration, at now: Int64) -> Change {
        finish(endpoint, index: index, generation: chosenFrom, failure: failure, latencyNanos: latency.nanoseconds, at: now)
    }

    /// `finish` with the latency in nanoseconds (the set's clock's unit).
    /// (`endpoint` may be nil when the list never changes: a plain
    /// origin's breaker.)
    mutating func finish(_ endpoint: PocketReplicaEndpoint?, index: Int, generation chosenFrom: Int, failure: Bool?,
                         latencyNanos latency: Int64, at now: Int64) -> Change {
        let i: Int
        if chosenFrom == generation, index < replicas.count {
            i = index
        } else if let endpoint, let found = replicas.firstIndex(where: { $0.endpoint == endpoint }) {
            i = found
        } else {
            return .none   // removed from the set meanwhile
        }
        replicas[i].outstanding = max(0, replicas[i].outstanding - 1)
        guard let failure else {
            replicas[i].health.abandonProbe(at: now)
            return .none
        }
        replicas[i].latency.add(nanoseconds: latency, at: now)
        replicas[i].requests += 1
        if failure { replicas[i].failures += 1 }
        guard let ejection else { return .none }
        switch replicas[i].health.record(failure: failure, at: now, policy: ejection, window: ejectionWindow) {
        case .none:
            return .none
        case .restored:
            return .restored(replicas[i].endpoint)
        case .reejected(let length):
            replicas[i].ejections += 1
            return .ejected(replicas[i].endpoint, for: length)
        case .tripped:
            let out = replicas.reduce(0) { $0 + ($1.health.isOut ? 1 : 0) }
            guard out < ejection.maxEjected(of: replicas.count) else { return .none }
            let length = replicas[i].health.eject(at: now, policy: ejection)
            replicas[i].ejections += 1
            return .ejected(replicas[i].endpoint, for: length)
        }
    }
}

/// A small seedable generator (SplitMix64): the set's random draws, and
/// the tests' reproducible ones.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
