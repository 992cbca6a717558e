/// When a replica (or, with `PocketClient.Configuration.originEjection`, a
/// plain origin) is taken out of rotation, and for how long: outlier
/// ejection and a circuit breaker per replica, as Envoy has them.
///
/// A replica is ejected after `consecutiveFailures` failures in a row, or
/// when `failureRate` is set and at least that share of its last
/// `minimumRequests` or more requests in `window` failed. A failure is a
/// response with a status in `failureStatuses` (5xx by default) or a
/// transport error (refused, reset, timed out; a cancelled request counts
/// as neither). An ejected replica gets no requests for `baseEjectionTime`
/// times the number of its recent ejections (capped at `maxEjectionTime`;
/// the count falls by one for each `baseEjectionTime` it then stays
/// healthy). When that time is over, the breaker is half-open: the next
/// request chosen for the set goes to that replica alone (a probe); a
/// success brings it back, a failure ejects it again for longer.
///
/// At most `maxEjectedShare` of a set's replicas are ejected at once (at
/// least one): past that, failures are counted but the replica stays in
/// rotation, so a bad deploy cannot empty a set by itself. With a share of
/// 1, every replica may be ejected; a request for a set whose replicas are
/// all ejected then fails at once with `.circuitOpen` instead of waiting
/// for timeouts. A plain origin is a set of one: ejecting it is allowed.
///
/// Off by default (nil on the set and on the client): no replica is
/// ejected until this is configured.
public struct PocketOutlierEjection: Sendable, Hashable {
    /// Failures in a row that eject a replica, 5 (Envoy's default).
    public var consecutiveFailures: Int
    /// The share of failed requests over `window` that ejects a replica
    /// (0...1), or nil (the default) for no rate rule.
    public var failureRate: Double?
    /// The window of the rate rule, 10 s.
    public var window: Duration
    /// Requests a replica must have had in `window` before the rate rule
    /// applies, 20: two failures of three are not an error rate.
    public var minimumRequests: Int
    /// How long a first ejection lasts, 30 s (Envoy's default); the n-th
    /// in a row lasts n times as long.
    public var baseEjectionTime: Duration
    /// The longest an ejection lasts, 300 s.
    public var maxEjectionTime: Duration
    /// The largest share of a set ejected at once, 0.5 (at least one
    /// replica whatever the share). 1 allows every replica to be ejected.
    public var maxEjectedShare: Double
    /// Statuses that count as failures, 500...599.
    public var failureStatuses: ClosedRange<Int>

    /// The defaults described on each property, changed where given.
    public init(consecutiveFailures: Int = 5, failureRate: Double? = nil, window: Duration = .seconds(10),
                minimumRequests: Int = 20, baseEjectionTime: Duration = .seconds(30),
                maxEjectionTime: Duration = .seconds(300), maxEjectedShare: Double = 0.5,
                failureStatuses: ClosedRange<Int> = 500...599) {
        self.consecutiveFailures = max(1, consecutiveFailures)
        self.failureRate = failureRate.map { min(1, max(0, $0)) }
        self.window = window
        self.minimumRequests = max(1, minimumRequests)
        self.baseEjectionTime = max(.milliseconds(1), baseEjectionTime)
        self.maxEjectionTime = max(self.baseEjectionTime, maxEjectionTime)
        self.maxEjectedShare = min(1, max(0, maxEjectedShare))
        self.failureStatuses = failureStatuses
    }

    /// How many of `count` replicas may be ejected at once.
    func maxEjected(of count: Int) -> Int {
        max(1, Int((maxEjectedShare * Double(count)).rounded(.down)))
    }
}

/// One replica's breaker: a pure state machine over a clock given as
/// nanoseconds, so tests drive it with a fake one.
struct ReplicaHealth: Sendable {
    enum State: Equatable {
        /// In rotation.
        case serving
        /// Out of rotation until this instant.
        case ejected(until: Int64)
        /// Half-open: one request (the probe) is in flight.
        case probing
    }

    private(set) var state = State.serving
    /// Failures in a row while serving.
    private(set) var consecutive = 0
    /// Ejections that still lengthen the next one.
    private(set) var ejections = 0
    private var restoredAt: Int64 = 0
    private var windowStart: Int64 = 0
    private var windowRequests = 0
    private var windowFailures = 0

    /// Ejected, or probing: counts against the set's share.
    var isOut: Bool { state != .serving }

    /// An ejected replica whose time is over at `now` (its next request is the probe).
    func isDue(at now: Int64) -> Bool {
        if case .ejected(let until) = state { return now >= until }
        return false
    }

    /// The probe was sent.
    mutating func beginProbe() {
        state = .probing
    }

    /// The probe was cancelled before it had an outcome: the replica is due
    /// again at once (the next request is the probe).
    mutating func abandonProbe(at now: Int64) {
        if state == .probing { state = .ejected(until: now) }
    }

    /// What an outcome did to the breaker.
    enum Change: Equatable {
        case none
        /// The rules call for an ejection (the caller checks the set's share, then calls `eject`).
        case tripped
        /// A probe succeeded: back in rotation.
        case restored
        /// A probe failed: ejected again, for this long.
        case reejected(Duration)
    }

    /// Records one outcome at `now` under `policy`.
    mutating func record(failure: Bool, at now: Int64, policy: PocketOutlierEjection) -> Change {
        record(failure: failure, at: now, policy: policy, window: policy.window.nanoseconds)
    }

    /// `record` with `policy.window` given in nanoseconds (the set keeps it
    /// so: a `Duration`'s nanoseconds take a 128-bit division).
    mutating func record(failure: Bool, at now: Int64, policy: PocketOutlierEjection, window: Int64) -> Change {
        switch state {
        case .ejected:
            return .none   // a request sent before the ejection
        case .probing:
            if failure { return .reejected(eject(at: now, policy: policy)) }
            state = .serving
            consecutive = 0
            restoredAt = now
            (windowStart, windowRequests, windowFailures) = (now, 0, 0)
            return .restored
        case .serving:
            break
        }
        if now - windowStart >= window {
            (windowStart, windowRequests, windowFailures) = (now, 0, 0)
        }
        windowRequests += 1
        guard failure else {
            consecutive = 0
            return .none
        }
        consecutive += 1
        windowFailures += 1
        if consecutive >= policy.consecutiveFailures { return .tripped }
        if let rate = policy.failureRate, windowRequests >= policy.minimumRequests,
           Double(windowFailures) >= rate * Double(windowRequests) {
            return .tripped
        }
        return .none
    }

    /// Ejects at `now`; returns for how long: the base time times the
    /// ejections that still count, capped.
    @discardableResult
    mutating func eject(at now: Int64, policy: PocketOutlierEjection) -> Duration {
        let base = policy.baseEjectionTime.nanoseconds
        if ejections > 0, restoredAt > 0, state != .probing {
            ejections = max(0, ejections - Int((now - restoredAt) / base))
        }
        ejections += 1
        let length = min(policy.maxEjectionTime.nanoseconds, base.multipliedReportingOverflow(by: Int64(ejections)).overflow
                         ? .max : base * Int64(ejections))
        state = .ejected(until: now + length)
        consecutive = 0
        (windowStart, windowRequests, windowFailures) = (now, 0, 0)
        return .nanoseconds(length)
    }

    /// The instant an ejected replica is due back, or nil.
    var ejectedUntil: Int64? {
        if case .ejected(let until) = state { return until }
        return nil
    }
}
