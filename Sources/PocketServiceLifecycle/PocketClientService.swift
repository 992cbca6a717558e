import Pocket
import ServiceLifecycle

/// A `PocketClient` as a swift-service-lifecycle `Service`: run it in the
/// service's `ServiceGroup` and the client shuts down with the service.
///
/// ```swift
/// let http = try PocketClientService(configuration: config, drainTimeout: .seconds(10))
/// let group = ServiceGroup(services: [http, server], gracefulShutdownSignals: [.sigterm], logger: logger)
/// // handlers use http.client
/// try await group.run()
/// ```
///
/// On graceful shutdown (SIGTERM, or `triggerGracefulShutdown()`) it:
/// 1. stops taking new requests: a request that starts now fails at once
///    with `.shutdown` (a retry of a request already running is let through);
/// 2. lets the requests in flight finish (streamed bodies included) for up
///    to `drainTimeout`;
/// 3. then shuts the client down (`PocketClient.shutdown()`): whatever is
///    still running fails with `.shutdown`, connections close, threads stop.
///
/// Cancelling the service's task skips step 2. A request waiting out a
/// retry backoff when the drain ends counts as finished and fails with
/// `.shutdown` when it tries again.
///
/// The service installs one middleware, first in the chain (it counts
/// attempts in flight and refuses new ones while draining), so its client
/// does not take the request path's shortcut for clients with no middleware.
public final class PocketClientService: Service {
    /// The client to send with; created with the service.
    public let client: PocketClient
    /// How long in-flight requests may run after shutdown begins, 30 s by
    /// default (below the usual 30–60 s a container orchestrator waits
    /// between SIGTERM and SIGKILL, counting the service's other parts).
    public let drainTimeout: Duration
    let gate: PocketAdmissionGate

    /// A client made from `configuration`, with the admission middleware
    /// ahead of its own.
    public init(configuration: PocketClient.Configuration = PocketClient.Configuration(),
                drainTimeout: Duration = .seconds(30)) throws {
        let gate = PocketAdmissionGate()
        var configuration = configuration
        configuration.handling.middleware.insert(gate, at: 0)
        self.gate = gate
        self.client = try PocketClient(configuration: configuration)
        self.drainTimeout = drainTimeout
    }

    /// Runs until graceful shutdown (then drains and shuts down) or until
    /// cancelled (then shuts down at once).
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            gate.close()
            try await client.shutdown()
            return
        }
        gate.close()
        let deadline = ContinuousClock.now + drainTimeout
        while ContinuousClock.now < deadline, !isDrained {
            do { try await Task.sleep(for: .milliseconds(5)) } catch { break }
        }
        try await client.shutdown()
    }

    /// No attempt in flight and nothing left in the engine (a streamed
    /// body still being read keeps its request in the engine).
    var isDrained: Bool {
        gate.inFlight == 0 && client.poolStatistics.pendingRequests == 0
    }

    /// Whether new requests are refused (shutdown has begun).
    public var isShuttingDown: Bool { gate.isClosed }
}

/// Counts attempts in flight and, once closed, refuses requests that start.
final class PocketAdmissionGate: PocketMiddleware {
    private struct State {
        var closed = false
        var inFlight = 0
    }

    private let state = Lock(State())

    var inFlight: Int { state.withLock { $0.inFlight } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func close() { state.withLock { $0.closed = true } }

    var hooks: PocketMiddlewareHooks { [.adapt, .observe] }

    func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
        let admitted = state.withLock { s -> Bool in
            guard !s.closed || context.attempt > 1 else { return false }
            s.inFlight += 1
            return true
        }
        guard admitted else {
            throw PocketError(.shutdown, "\(request.method) \(request.url.absoluteString): the client is shutting down (graceful shutdown began) and takes no new requests")
        }
        context["pocket.lifecycle.admitted"] = context.attempt
        return request
    }

    func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                 context: PocketMiddlewareContext) async {
        // Only an attempt this gate admitted is counted out.
        guard context["pocket.lifecycle.admitted"] as? Int == context.attempt else { return }
        context["pocket.lifecycle.admitted"] = nil
        state.withLock { $0.inFlight -= 1 }
    }
}
