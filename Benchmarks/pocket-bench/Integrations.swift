import CoreMetrics
import InMemoryTracing
import MetricsTestKit
import Pocket
import PocketMetrics
import PocketTracing
import Tracing

/// `--integrations`: swift-metrics and swift-distributed-tracing bootstrapped
/// with `backend`, then PocketMetricsMiddleware and PocketTracingMiddleware
/// made as a service makes them (reading the bootstrapped systems).
enum Integrations {
    /// The two middleware, after bootstrapping `backend` (`noop` or
    /// `memory`). Call once per process: a bootstrap cannot be repeated.
    static func bootstrap(_ backend: String) -> [any PocketMiddleware] {
        switch backend {
        case "memory":
            MetricsSystem.bootstrap(TestMetrics())
            InstrumentationSystem.bootstrap(InMemoryTracer())
        default:
            MetricsSystem.bootstrap(NOOPMetricsHandler.instance)
            InstrumentationSystem.bootstrap(NoOpTracer())
        }
        return [PocketMetricsMiddleware(), PocketTracingMiddleware()]
    }
}
