import CoreMetrics
import Pocket

/// Reports a `PocketReplicaSet` to swift-metrics: its ejections and
/// restorations as they happen, and its replicas' load and state as gauges.
///
/// ```swift
/// let users = PocketReplicaSet(name: "users", endpoints: [...], ejection: PocketOutlierEjection())
/// let metrics = PocketReplicaMetrics(set: users)
/// let sampling = Task { await metrics.run(every: .seconds(5)) }
/// ```
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `pocket_client_replica_ejections_total` | counter | `set`, `replica` |
/// | `pocket_client_replica_restorations_total` | counter | `set`, `replica` |
/// | `pocket_client_replicas_ejected` | gauge | `set` (updated at each event and sample) |
/// | `pocket_client_replicas` | gauge | `set` |
/// | `pocket_client_replica_outstanding` | gauge | `set`, `replica` (sampled) |
/// | `pocket_client_replica_latency_seconds` | gauge | `set`, `replica`: the peak-EWMA latency (sampled) |
///
/// `replica` is the replica's origin (`scheme://host:port`, with its
/// address for one found in DNS): a set's replicas are few, so the
/// dimension is bounded by the set's size.
public struct PocketReplicaMetrics: Sendable {
    /// The set reported.
    public let set: PocketReplicaSet
    /// The label prefix, `pocket_client` by default.
    public let prefix: String
    private let factory: any MetricsFactory

    /// Counts the set's events from now on with metrics made by `factory`
    /// (`MetricsSystem.factory` by default), labelled `prefix_…`.
    public init(set: PocketReplicaSet, prefix: String = "pocket_client", factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.set = set
        self.prefix = prefix
        self.factory = factory
        let name = set.name
        set.addObserver { event in
            switch event.kind {
            case .ejected, .restored:
                let label = event.kind == .ejected ? "\(prefix)_replica_ejections_total" : "\(prefix)_replica_restorations_total"
                Counter(label: label, dimensions: [("set", name), ("replica", event.replica?.description ?? "")],
                        factory: factory).increment()
            case .replicasChanged:
                Gauge(label: "\(prefix)_replicas", dimensions: [("set", name)], factory: factory).record(event.replicaCount)
            }
            Gauge(label: "\(prefix)_replicas_ejected", dimensions: [("set", name)], factory: factory).record(event.ejectedCount)
        }
    }

    /// Records one sample of every gauge.
    public func record() {
        let replicas = set.statistics
        Gauge(label: "\(prefix)_replicas", dimensions: [("set", set.name)], factory: factory).record(replicas.count)
        Gauge(label: "\(prefix)_replicas_ejected", dimensions: [("set", set.name)], factory: factory)
            .record(replicas.filter(\.isEjected).count)
        for replica in replicas {
            let dimensions = [("set", set.name), ("replica", replica.endpoint.description)]
            Gauge(label: "\(prefix)_replica_outstanding", dimensions: dimensions, factory: factory).record(replica.outstanding)
            let (seconds, attoseconds) = replica.latency.components
            Gauge(label: "\(prefix)_replica_latency_seconds", dimensions: dimensions, factory: factory)
                .record(Double(seconds) + Double(attoseconds) / 1e18)
        }
    }

    /// Samples every `interval` until the calling task is cancelled.
    public func run(every interval: Duration) async {
        while !Task.isCancelled {
            record()
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }
}
