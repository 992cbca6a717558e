/// A change in a `PocketReplicaSet`, as its observers see it
/// (`PocketReplicaSet.addObserver`).
public struct PocketReplicaEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The replica was taken out of rotation for `ejectedFor`.
        case ejected
        /// A half-open probe succeeded: the replica is back in rotation.
        case restored
        /// The set's list of replicas changed (DNS, the application's
        /// provider or `update`); `replica` is nil.
        case replicasChanged
    }

    /// What happened.
    public var kind: Kind
    /// The set's name.
    public var set: String
    /// The replica it happened to (nil for `.replicasChanged`).
    public var replica: PocketReplicaEndpoint?
    /// For `.ejected`: how long the replica is out.
    public var ejectedFor: Duration?
    /// Replicas of the set out of rotation after the change.
    public var ejectedCount: Int
    /// Replicas in the set.
    public var replicaCount: Int
}

/// What a `PocketReplicaSet` knows of one replica (`PocketReplicaSet.statistics`).
public struct PocketReplicaStatistics: Sendable, Hashable {
    /// The replica.
    public var endpoint: PocketReplicaEndpoint
    /// Requests sent to it that have not ended.
    public var outstanding: Int
    /// Its peak-EWMA latency now (decayed since the last sample).
    public var latency: Duration
    /// Requests that ended with a response or an error.
    public var requests: UInt64
    /// Of those, failures (a status in `PocketOutlierEjection.failureStatuses`, or a transport error).
    public var failures: UInt64
    /// Times it was ejected.
    public var ejections: UInt64
    /// Whether it is out of rotation now (ejected, or half-open with its probe in flight).
    public var isEjected: Bool
}
