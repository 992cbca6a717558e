#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CoreMetrics
import Pocket

/// Reports every request attempt to swift-metrics. Opt-in: install it, and
/// only then does the request path do this work (a client without it pays
/// nothing).
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.middleware.append(PocketMetricsMiddleware())
/// ```
///
/// Per attempt (a retried request is counted once per attempt):
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `pocket_client_requests_total` | counter | `method`, `status_class` (`2xx`…`5xx`, or `error`), `origin` |
/// | `pocket_client_errors_total` | counter | `code` (the `PocketError` code, `cancelled`, or `other`), `method`, `origin` |
/// | `pocket_client_request_duration` | timer | `method`, `origin` |
/// | `pocket_client_time_to_first_byte` | timer | `method`, `origin` (collected responses that reached the engine) |
///
/// `origin` is `scheme://host:port`, never the path or query (a dimension
/// per URL would grow without bound). The middleware is the chain's
/// outermost observer when installed first. Pool gauges come from
/// `PocketPoolMetrics`.
public struct PocketMetricsMiddleware: PocketMiddleware {
    /// The label prefix, `pocket_client` by default.
    public let prefix: String
    private let cache: MetricCache

    /// Metrics made by `factory` (the process's `MetricsSystem.factory` by
    /// default), labelled `prefix_…`.
    public init(prefix: String = "pocket_client", factory: (any MetricsFactory)? = nil) {
        self.prefix = prefix
        self.cache = MetricCache(factory: factory ?? MetricsSystem.factory)
    }

    /// Records the attempt: the request counter, the duration and first-byte
    /// timers, and the error counter for a failure.
    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                        context: PocketMiddlewareContext) async {
        let method = request.method.rawValue
        let origin = Self.origin(of: request.url)
        let statusClass: String
        switch outcome {
        case .success(let response):
            statusClass = "\(response.status / 100)xx"
            let firstByte = response.timings.firstByte
            if firstByte > .zero {
                cache.timer("\(prefix)_time_to_first_byte", [("method", method), ("origin", origin)])
                    .recordNanoseconds(Self.nanoseconds(firstByte))
            }
        case .failure(let error):
            statusClass = "error"
            let code = (error as? PocketError)?.code.name ?? (error is CancellationError ? "cancelled" : "other")
            cache.counter("\(prefix)_errors_total", [("code", code), ("method", method), ("origin", origin)]).increment()
        }
        cache.counter("\(prefix)_requests_total", [("method", method), ("status_class", statusClass), ("origin", origin)])
            .increment()
        cache.timer("\(prefix)_request_duration", [("method", method), ("origin", origin)])
            .recordNanoseconds(Self.nanoseconds(context.attemptElapsed))
    }

    /// `scheme://host:port` of `url` (the scheme's default port when none is written).
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host ?? "")" + ":\(port)"
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (s, attos) = d.components
        return s &* 1_000_000_000 &+ attos / 1_000_000_000
    }
}

/// Samples a client's pool (and optionally a request queue) into gauges:
/// `pocket_client_connections` (`state`: `active`, `idle`),
/// `pocket_client_requests_waiting` (submitted, not yet on a connection)
/// and `pocket_client_queue_depth` (requests pending in the queue).
///
/// ```swift
/// let gauges = PocketPoolMetrics(client: client, queue: queue)
/// let sampling = Task { await gauges.run(every: .seconds(5)) }
/// ```
///
/// Gauges are samples: `record()` takes one, `run(every:)` takes one per
/// interval until its task is cancelled. Each sample is a few atomic loads.
public struct PocketPoolMetrics: Sendable {
    /// The client whose pool is sampled.
    public let client: PocketClient
    /// A queue whose pending requests are reported as the queue depth; nil for none.
    public let queue: PocketRequestQueue?
    /// The label prefix, `pocket_client` by default.
    public let prefix: String
    private let active: Gauge
    private let idle: Gauge
    private let waiting: Gauge
    private let depth: Gauge?

    /// Gauges made by `factory` (`MetricsSystem.factory` by default).
    public init(client: PocketClient, queue: PocketRequestQueue? = nil, prefix: String = "pocket_client",
                factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.client = client
        self.queue = queue
        self.prefix = prefix
        active = Gauge(label: "\(prefix)_connections", dimensions: [("state", "active")], factory: factory)
        idle = Gauge(label: "\(prefix)_connections", dimensions: [("state", "idle")], factory: factory)
        waiting = Gauge(label: "\(prefix)_requests_waiting", dimensions: [], factory: factory)
        depth = queue == nil ? nil : Gauge(label: "\(prefix)_queue_depth", dimensions: [], factory: factory)
    }

    /// Records one sample of every gauge.
    public func record() {
        let stats = client.poolStatistics
        active.record(stats.activeConnections)
        idle.record(stats.idleConnections)
        waiting.record(stats.waitingRequests)
        if let depth, let queue { depth.record(queue.metrics.pending) }
    }

    /// Records a sample every `interval` until the task is cancelled (then
    /// returns without throwing).
    public func run(every interval: Duration) async {
        while !Task.isCancelled {
            record()
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }
}

/// Counters and timers by label and dimensions, made once each (a metrics
/// backend's handler lookup is not free, and this runs per attempt).
final class MetricCache: Sendable {
    private struct Key: Hashable {
        var label: String
        var dimensions: [String]
    }

    // Counter and Timer are thread-safe once made (swift-metrics' contract).
    private struct Store: @unchecked Sendable {
        var counters: [Key: Counter] = [:]
        var timers: [Key: CoreMetrics.Timer] = [:]
    }

    private let factory: any MetricsFactory
    private let store = Lock(Store())

    init(factory: any MetricsFactory) { self.factory = factory }

    func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        let key = Key(label: label, dimensions: dimensions.flatMap { [$0.0, $0.1] })
        return store.withLock { store in
            if let counter = store.counters[key] { return counter }
            let counter = Counter(label: label, dimensions: dimensions, factory: factory)
            store.counters[key] = counter
            return counter
        }
    }

    func timer(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Timer {
        let key = Key(label: label, dimensions: dimensions.flatMap { [$0.0, $0.1] })
        return store.withLock { store in
            if let timer = store.timers[key] { return timer }
            let timer = CoreMetrics.Timer(label: label, dimensions: dimensions, factory: factory)
            store.timers[key] = timer
            return timer
        }
    }
}
