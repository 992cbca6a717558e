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
///
/// - `noop`: the packages' no-op backends (nothing to record: the
///   middleware step aside);
/// - `memory`: swift-distributed-tracing's `InMemoryTracer` and
///   swift-metrics' `TestMetrics`, which keep every span and value;
/// - `discard`: backends that take every span, attribute and value and
///   keep none (their spans say they record): what the middleware do of
///   their own, without a backend's work.
enum Integrations {
    /// The two middleware, after bootstrapping `backend` (`noop`, `memory`
    /// or `discard`). Call once per process: a bootstrap cannot be repeated.
    static func bootstrap(_ backend: String) -> [any PocketMiddleware] {
        switch backend {
        case "memory":
            MetricsSystem.bootstrap(TestMetrics())
            InstrumentationSystem.bootstrap(InMemoryTracer())
        case "discard":
            MetricsSystem.bootstrap(DiscardingMetrics())
            InstrumentationSystem.bootstrap(DiscardingTracer())
        default:
            MetricsSystem.bootstrap(NOOPMetricsHandler.instance)
            InstrumentationSystem.bootstrap(NoOpTracer())
        }
        return [PocketMetricsMiddleware(), PocketTracingMiddleware()]
    }
}

/// A tracer whose spans record (so the middleware compute everything) and
/// keep nothing.
struct DiscardingTracer: Tracer {
    func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext,
                                           ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
                                           function: String, file fileID: String, line: UInt) -> DiscardingSpan {
        DiscardingSpan(context: context())
    }

    func forceFlush() {}

    func inject<Carrier, Inject>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Carrier == Inject.Carrier {}

    func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract: Extractor, Carrier == Extract.Carrier {}
}

/// A span of `DiscardingTracer`: recording, keeping nothing.
struct DiscardingSpan: Tracing.Span {
    let context: ServiceContext
    var isRecording: Bool { true }
    var operationName: String {
        get { "" }
        nonmutating set {}
    }
    var attributes: SpanAttributes {
        get { [:] }
        nonmutating set {}
    }

    func setStatus(_ status: SpanStatus) {}
    func addLink(_ link: SpanLink) {}
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {}
}

/// A metrics backend whose counters, recorders and timers keep nothing.
struct DiscardingMetrics: MetricsFactory {
    final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, TimerHandler, MeterHandler, Sendable {
        func increment(by: Int64) {}
        func increment(by: Double) {}
        func reset() {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
        func set(_ value: Int64) {}
        func set(_ value: Double) {}
        func decrement(by: Double) {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler { Handler() }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler { Handler() }
    func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler { Handler() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler { Handler() }
    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler { Handler() }
    func destroyCounter(_ handler: CounterHandler) {}
    func destroyMeter(_ handler: MeterHandler) {}
    func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: RecorderHandler) {}
    func destroyTimer(_ handler: TimerHandler) {}
}
