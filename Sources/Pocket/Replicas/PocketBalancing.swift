#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a `PocketReplicaSet` chooses the replica of each request among those
/// not ejected.
public enum PocketBalancing: Sendable, Hashable {
    /// Power of two choices (Mitzenmacher), weighted as Finagle's and
    /// Linkerd's peak-EWMA balancers are: two replicas are drawn at random
    /// and the one with the lower cost is taken, the cost being
    /// `(outstanding requests + 1) × latency`. The latency is an
    /// exponentially weighted moving average of the replica's response
    /// times that jumps at once to a slower sample (the peak) and decays
    /// towards faster ones with time constant `decay`; between samples it
    /// decays towards zero, so a replica that was slow is tried again
    /// after a while. A replica slower than the others, or with more
    /// requests waiting, therefore gets fewer requests, at the cost of two
    /// random draws per request and no shared scan.
    case powerOfTwoChoices(decay: Duration)
    /// Each replica in turn, whatever its load or latency (what a client
    /// without a balancer does with a list of URLs).
    case roundRobin

    /// Power of two choices with a 10 s decay (Finagle's and Linkerd's default).
    public static let powerOfTwoChoices = PocketBalancing.powerOfTwoChoices(decay: .seconds(10))
}

/// A replica's latency as a peak-sensitive EWMA, in nanoseconds.
struct PeakEWMA: Sendable {
    /// The average at `stamp`, in nanoseconds (0: nothing measured yet).
    private(set) var nanos: Double = 0
    /// When it was last updated, in nanoseconds of the set's clock.
    private(set) var stamp: Int64 = 0
    /// The time constant, in nanoseconds.
    let tau: Double

    init(decay: Duration) {
        tau = max(1, Double(decay.nanoseconds))
    }

    /// Adds a response time measured at `now`: a slower one replaces the
    /// average (the peak), a faster one is weighted by how long ago the
    /// last sample was (`exp(-Δt/τ)` for the old average).
    mutating func add(_ sample: Duration, at now: Int64) {
        add(nanoseconds: sample.nanoseconds, at: now)
    }

    /// `add` of a response time in nanoseconds (what the set measures: no
    /// `Duration`, whose nanoseconds take a 128-bit division).
    mutating func add(nanoseconds sample: Int64, at now: Int64) {
        let rtt = Double(max(0, sample))
        if rtt > nanos {
            nanos = rtt
        } else {
            let w = exp(-Double(max(0, now - stamp)) / tau)
            nanos = nanos * w + rtt * (1 - w)
        }
        stamp = now
    }

    /// The average at `now`, decayed towards zero since the last sample (a
    /// replica that gets no traffic because it was slow is tried again).
    func value(at now: Int64) -> Double {
        nanos * exp(-Double(max(0, now - stamp)) / tau)
    }
}

/// The pure choice of one replica among candidates, for either balancing.
enum ReplicaChoice {
    /// What the choice sees of one candidate.
    struct Candidate {
        var index: Int
        var outstanding: Int
        var latency: Double
    }

    /// The cost power of two choices compares: (outstanding + 1) ×
    /// (latency + 1 µs). The microsecond keeps the outstanding count
    /// deciding between replicas with no latency measured yet.
    static func cost(_ c: Candidate) -> Double {
        Double(c.outstanding + 1) * (c.latency + 1_000)
    }

    /// Two distinct candidates drawn at random, the cheaper taken (the first
    /// drawn on a tie). One candidate is taken as it is.
    static func powerOfTwo<G: RandomNumberGenerator>(_ candidates: [Candidate], using generator: inout G) -> Int {
        powerOfTwo(count: candidates.count, index: { candidates[$0].index }, { candidates[$0] }, using: &generator)
    }

    /// `powerOfTwo` over `count` candidates read by position (no array
    /// made): `index` gives a position's replica, `candidate` what the
    /// choice compares (read only when there are two to compare).
    static func powerOfTwo<G: RandomNumberGenerator>(count: Int, index: (Int) -> Int, _ candidate: (Int) -> Candidate,
                                                     using generator: inout G) -> Int {
        precondition(count > 0)
        if count == 1 { return index(0) }
        let a = Int.random(in: 0..<count, using: &generator)
        var b = Int.random(in: 0..<(count - 1), using: &generator)
        if b >= a { b += 1 }
        let (first, second) = (candidate(a), candidate(b))
        return cost(second) < cost(first) ? second.index : first.index
    }

    /// The first candidate at or after `cursor` in replica order (wrapping),
    /// for round-robin: the caller advances its cursor past the result.
    static func roundRobin(_ candidates: [Candidate], cursor: Int) -> Int {
        roundRobin(count: candidates.count, index: { candidates[$0].index }, cursor: cursor)
    }

    /// `roundRobin` over `count` candidates in replica order, each
    /// position's replica read from `index` (their latencies are not read).
    static func roundRobin(count: Int, index: (Int) -> Int, cursor: Int) -> Int {
        precondition(count > 0)
        for n in 0..<count {
            let i = index(n)
            if i >= cursor { return i }
        }
        return index(0)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        // `components` traps when the seconds do not fit an Int64 (a
        // duration between two instants can be that long). Under 2^92
        // attoseconds either way (about 157 years) neither it nor the sum
        // below can overflow; past that, the nanoseconds are clamped.
        let attoseconds = attoseconds
        let top = attoseconds >> 92
        guard top == 0 || top == -1 else { return Int64(clamping: attoseconds / 1_000_000_000) }
        let (s, a) = components
        return s &* 1_000_000_000 &+ a / 1_000_000_000
    }
}
