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
    /// Nil when the factory is swift-metrics' no-op one: every metric it
    /// makes discards what it is given, so there is nothing to record.
    private let cache: MetricCache?

    /// Metrics made by `factory` (the process's `MetricsSystem.factory` by
    /// default), labelled `prefix_…`.
    ///
    /// The factory is read here, once: bootstrap `MetricsSystem` before
    /// making the middleware. With no backend bootstrapped (swift-metrics'
    /// `NOOPMetricsHandler`) the middleware records nothing and costs a nil
    /// check per attempt.
    public init(prefix: String = "pocket_client", factory: (any MetricsFactory)? = nil) {
        let factory = factory ?? MetricsSystem.factory
        self.prefix = prefix
        self.cache = factory is NOOPMetricsHandler ? nil : MetricCache(prefix: prefix, factory: factory)
    }

    /// Whether attempts are recorded: false when the factory is
    /// swift-metrics' no-op one (no backend bootstrapped when the middleware
    /// was made).
    public var isRecording: Bool { cache != nil }

    /// `observe` while recording; none with the no-op factory (the chain
    /// then skips the middleware: a request pays nothing for it).
    public var hooks: PocketMiddlewareHooks { isRecording ? .observe : [] }

    /// Records the attempt: the request counter, the duration and first-byte
    /// timers, and the error counter for a failure.
    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                        context: PocketMiddlewareContext) async {
        guard let cache else { return }
        let elapsed = context.attemptElapsedNanoseconds
        switch outcome {
        case .success(let response):
            let firstByte = response.timings.firstByteNanos
            let metrics = cache.metrics(method: request.method.rawValue, url: request.url, outcome: .status(response.status),
                                        firstByte: firstByte > 0)
            metrics.firstByte?.recordNanoseconds(firstByte)
            metrics.requests.increment()
            metrics.duration.recordNanoseconds(elapsed)
        case .failure(let error):
            let code = (error as? PocketError)?.code.name ?? (error is CancellationError ? "cancelled" : "other")
            let metrics = cache.metrics(method: request.method.rawValue, url: request.url, outcome: .error(code), firstByte: false)
            metrics.error?.increment()
            metrics.requests.increment()
            metrics.duration.recordNanoseconds(elapsed)
        }
    }

    /// `scheme://host:port` of `url` (the scheme's default port when none is written).
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host ?? "")" + ":\(port)"
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

/// The metrics of each method and origin, each made on first use (a
/// backend registers a series when it is made, so one that never happens
/// never appears), found with one lock per attempt.
///
/// Finding them takes the request's method and origin; the origin comes
/// from parsing the URL, so the series last found for each URL string are
/// remembered (up to `maxRemembered` URLs, then forgotten all at once: a
/// client calling one service finds its series by a hash of the URL).
final class MetricCache: Sendable {
    /// What one attempt records into.
    struct Metrics {
        var requests: Counter
        var error: Counter?
        var duration: CoreMetrics.Timer
        var firstByte: CoreMetrics.Timer?
    }

    /// How an attempt ended: a status (its class is the dimension), or an error code.
    enum Outcome {
        case status(Int)
        case error(String)
    }

    static let maxRemembered = 256

    private struct SeriesKey: Hashable {
        var method: String
        var origin: String
    }

    private struct URLKey: Hashable {
        var method: String
        var url: String
    }

    /// One method and origin. Mutated only under the cache's lock.
    private final class Series {
        let method: String
        let origin: String
        /// By status class 0…9 (`0xx`…`9xx`), then `error`.
        var requests = [Counter?](repeating: nil, count: 11)
        /// Classes past 9xx (a status of 1000 or more, from a transport).
        var otherRequests: [Int: Counter] = [:]
        var errors: [String: Counter] = [:]
        var duration: CoreMetrics.Timer?
        var firstByte: CoreMetrics.Timer?

        init(method: String, origin: String) {
            self.method = method
            self.origin = origin
        }
    }

    // Counter and Timer are thread-safe once made (swift-metrics' contract);
    // the series are touched only under the lock.
    private struct Store: @unchecked Sendable {
        var series: [SeriesKey: Series] = [:]
        var byURL: [URLKey: Series] = [:]
        /// The URL found last and its series: a client that calls one URL
        /// over and over compares two strings (often the same storage)
        /// instead of hashing them.
        var last: (key: URLKey, series: Series)?
    }

    private let factory: any MetricsFactory
    private let requestsLabel: String
    private let errorsLabel: String
    private let durationLabel: String
    private let firstByteLabel: String
    private let store = Lock(Store())

    init(prefix: String, factory: any MetricsFactory) {
        self.factory = factory
        requestsLabel = "\(prefix)_requests_total"
        errorsLabel = "\(prefix)_errors_total"
        durationLabel = "\(prefix)_request_duration"
        firstByteLabel = "\(prefix)_time_to_first_byte"
    }

    /// The metrics an attempt of `method` to `url` that ended with
    /// `outcome` records into (the first-byte timer only when `firstByte`),
    /// made now if this is their first use.
    func metrics(method: String, url: URL, outcome: Outcome, firstByte: Bool) -> Metrics {
        let urlKey = URLKey(method: method, url: url.absoluteString)
        return store.withLock { store in
            let series: Series
            if let last = store.last, last.key == urlKey {
                series = last.series
            } else if let known = store.byURL[urlKey] {
                series = known
                store.last = (urlKey, known)
            } else {
                let key = SeriesKey(method: method, origin: PocketMetricsMiddleware.origin(of: url))
                if let known = store.series[key] {
                    series = known
                } else {
                    series = Series(method: method, origin: key.origin)
                    store.series[key] = series
                }
                if store.byURL.count >= Self.maxRemembered { store.byURL.removeAll(keepingCapacity: true) }
                store.byURL[urlKey] = series
                store.last = (urlKey, series)
            }
            var error: Counter?
            let requests: Counter
            switch outcome {
            case .status(let status):
                let statusClass = status / 100
                if (0..<10).contains(statusClass) {
                    if let known = series.requests[statusClass] {
                        requests = known
                    } else {
                        requests = requestCounter(series, "\(statusClass)xx")
                        series.requests[statusClass] = requests
                    }
                } else if let known = series.otherRequests[statusClass] {
                    requests = known
                } else {
                    requests = requestCounter(series, "\(statusClass)xx")
                    series.otherRequests[statusClass] = requests
                }
            case .error(let code):
                if let known = series.requests[10] {
                    requests = known
                } else {
                    requests = requestCounter(series, "error")
                    series.requests[10] = requests
                }
                if let known = series.errors[code] {
                    error = known
                } else {
                    let counter = Counter(label: errorsLabel, dimensions: [("code", code), ("method", series.method), ("origin", series.origin)],
                                          factory: factory)
                    series.errors[code] = counter
                    error = counter
                }
            }
            let duration = series.duration ?? {
                let timer = CoreMetrics.Timer(label: durationLabel, dimensions: [("method", series.method), ("origin", series.origin)],
                                              factory: factory)
                series.duration = timer
                return timer
            }()
            var first: CoreMetrics.Timer?
            if firstByte {
                first = series.firstByte ?? {
                    let timer = CoreMetrics.Timer(label: firstByteLabel, dimensions: [("method", series.method), ("origin", series.origin)],
                                                  factory: factory)
                    series.firstByte = timer
                    return timer
                }()
            }
            return Metrics(requests: requests, error: error, duration: duration, firstByte: first)
        }
    }

    private func requestCounter(_ series: Series, _ statusClass: String) -> Counter {
        Counter(label: requestsLabel, dimensions: [("method", series.method), ("status_class", statusClass), ("origin", series.origin)],
                factory: factory)
    }
}
