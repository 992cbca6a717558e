#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A logical service with several replicas, addressed by a name of its own.
///
/// Register a set on the client and send to its name as the URL's host:
///
/// ```swift
/// let users = try PocketReplicaSet(name: "users", urls: [
///     URL(string: "http://10.0.0.7:8080")!, URL(string: "http://10.0.0.8:8080")!,
/// ], ejection: PocketOutlierEjection(consecutiveFailures: 5))
/// var config = PocketClient.Configuration()
/// config.replicaSets = [users]
/// let client = try PocketClient(configuration: config)
/// let response = try await client.send(PocketRequest(url: URL(string: "http://users/v1/profile")!))
/// ```
///
/// Each hop of a request whose URL host is the set's `name` (compared
/// without case; the URL's scheme and port are ignored) goes to one
/// replica, chosen by `balancing` among the replicas not ejected. The
/// request is sent as if its URL had the replica's scheme, host and port
/// (`PocketReplicaEndpoint`): the `Host` field and the TLS server name are
/// the replica's (a request that sets its own `Host` field sends that one),
/// and each replica has its own connection pool. `response.url` stays the
/// URL asked for.
///
/// Every attempt of a request (each retry, each hedge) is a new hop and a
/// new choice, and prefers a replica the same request has not used yet:
/// the request path keeps the replicas a request used (a task-local bound
/// for the whole request, which hedges started as child tasks inherit) and
/// the choice skips them while another replica is in rotation.
///
/// The list of replicas is static (`init(name:endpoints:)`), found in DNS
/// and refreshed (`dns(name:host:port:)`), or given by the application as
/// an `AsyncSequence` of lists (`init(name:updates:)`). A request for a
/// discovered set that has no list yet waits for the first one, up to the
/// request's connect timeout (`.noReplicas` after that, or for an empty list).
///
/// With `ejection`, failing replicas are taken out of rotation (see
/// `PocketOutlierEjection`); when all are out, a request fails at once with
/// `.circuitOpen`. Observers hear of ejections and restorations
/// (`addObserver`); `statistics` shows each replica's load, latency and state.
public final class PocketReplicaSet: Sendable {
    /// The name requests use as their URL's host (lower case).
    public let name: String
    /// How a replica is chosen; power of two choices by default.
    public let balancing: PocketBalancing
    /// When replicas are ejected; nil (no ejection) by default.
    public let ejection: PocketOutlierEjection?
    /// Whether a routed request's URL is moved to the chosen replica (a
    /// plain origin's breaker sends to the origin itself).
    let moves: Bool
    private let state: Lock<Inner>
    private let discovery = Lock<Task<Void, Never>?>(nil)
    /// Whether the set has had a list, or its discovery failed: then a hop
    /// does not wait for one (set once, never cleared).
    private let ready = Atomic<Bool>(false)
    /// The set's clock, in nanoseconds: a fake one in tests; nil for
    /// `PocketDeadline.nowNanos` (called directly, not through a closure).
    private let clock: (@Sendable () -> Int64)?

    private struct Inner {
        var set: ReplicaSetState
        var observers: [@Sendable (PocketReplicaEvent) -> Void] = []
        /// Requests waiting for a discovered set's first list.
        var waiting: [UnsafeContinuation<Void, Never>] = []
        /// Why the last discovery failed, for `.noReplicas`.
        var discoveryProblem: String?
    }

    /// A set of a fixed list of replicas (change it with `update`).
    public convenience init(name: String, endpoints: [PocketReplicaEndpoint], balancing: PocketBalancing = .powerOfTwoChoices,
                            ejection: PocketOutlierEjection? = nil) {
        self.init(name: name, balancing: balancing, ejection: ejection)
        update(endpoints)
    }

    /// A set of the replicas at `urls` (scheme, host and port of each).
    /// Throws `.invalidURL` for a URL that is not `http`/`https` with a host.
    public convenience init(name: String, urls: [URL], balancing: PocketBalancing = .powerOfTwoChoices,
                            ejection: PocketOutlierEjection? = nil) throws(PocketError) {
        var endpoints: [PocketReplicaEndpoint] = []
        for url in urls { endpoints.append(try PocketReplicaEndpoint(url)) }
        self.init(name: name, endpoints: endpoints, balancing: balancing, ejection: ejection)
    }

    /// A set whose replicas the application gives: each element of
    /// `updates` replaces the list (replicas that stay keep their load,
    /// latency and breaker state). Iterated from a task of the set's own
    /// until it ends, fails or the set is released; the last list stays.
    public convenience init<S: AsyncSequence & Sendable>(name: String, updates: S, balancing: PocketBalancing = .powerOfTwoChoices,
                                                         ejection: PocketOutlierEjection? = nil)
    where S.Element == [PocketReplicaEndpoint] {
        self.init(name: name, balancing: balancing, ejection: ejection)
        startDiscovery { [weak self] in
            do {
                for try await list in updates {
                    guard let self else { return }
                    self.update(list)
                }
            } catch {
                self?.discoveryFailed("the replica provider of '\(name)' failed: \(error)")
            }
        }
    }

    /// A set with no replicas until `update` gives some.
    init(name: String, balancing: PocketBalancing, ejection: PocketOutlierEjection?, moves: Bool = true,
         seed: UInt64 = UInt64.random(in: 0...UInt64.max), clock: (@Sendable () -> Int64)? = nil) {
        self.name = name.lowercased()
        self.balancing = balancing
        self.ejection = ejection
        self.moves = moves
        self.state = Lock(Inner(set: ReplicaSetState(balancing: balancing, ejection: ejection, seed: seed)))
        self.clock = clock
    }

    deinit {
        discovery.withLock { $0?.cancel() }
    }

    /// The set's clock: the deadlines' (CLOCK_BOOTTIME in nanoseconds, read
    /// directly: a `ContinuousClock` instant would take 128-bit arithmetic
    /// each time), or the one the set was made with.
    @inline(__always)
    private func now() -> Int64 { clock?() ?? PocketDeadline.nowNanos() }

    /// Runs `body` as the set's discovery task (cancelled when the set goes).
    func startDiscovery(_ body: @escaping @Sendable () async -> Void) {
        let task = Task.detached(operation: body)
        discovery.withLock { $0 = task }
    }

    // MARK: the list

    /// The replicas now.
    public var endpoints: [PocketReplicaEndpoint] {
        state.withLock { $0.set.replicas.map(\.endpoint) }
    }

    /// Replaces the list of replicas (duplicates dropped). Replicas that
    /// stay keep their load, latency and breaker state.
    public func update(_ endpoints: [PocketReplicaEndpoint]) {
        let (changed, waiting, event) = state.withLock { inner in
            let changed = inner.set.replace(with: endpoints)
            inner.discoveryProblem = nil
            ready.store(true, ordering: .relaxed)
            let waiting = inner.waiting
            inner.waiting = []
            return (changed, waiting, changed ? self.makeEvent(.replicasChanged, nil, nil, inner) : nil)
        }
        for continuation in waiting { continuation.resume() }
        if changed, let event { notify(event) }
    }

    /// Records why discovery failed (named by `.noReplicas`); the list stays.
    func discoveryFailed(_ problem: String) {
        let waiting = state.withLock { inner in
            inner.discoveryProblem = problem
            ready.store(true, ordering: .relaxed)
            let waiting = inner.waiting
            inner.waiting = []
            return waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Why the last discovery failed, until a list comes (nil then).
    var discoveryProblem: String? {
        state.withLock { $0.discoveryProblem }
    }

    /// Whether a hop may lease at once: the set has had a list, or its
    /// discovery failed (`waitForReplicas` would return at once).
    @inline(__always)
    var isReady: Bool { ready.load(ordering: .relaxed) }

    /// Waits until the set has had a list (a discovered set's first), at most `limit`.
    func waitForReplicas(upTo limit: Duration) async {
        let ready = state.withLock { $0.set.populated || $0.discoveryProblem != nil }
        if ready { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.wakeWaiting()
        }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let now = state.withLock { inner -> Bool in
                if inner.set.populated || inner.discoveryProblem != nil { return true }
                inner.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }

    private func wakeWaiting() {
        let waiting = state.withLock { inner in
            let waiting = inner.waiting
            inner.waiting = []
            return waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    // MARK: choosing and reporting

    /// One request's replica: where it goes and how to report its end.
    struct Lease {
        /// Where the hop goes: nil for a set that does not move its
        /// requests (a plain origin's breaker), whose list never changes.
        let endpoint: PocketReplicaEndpoint?
        let index: Int
        let generation: Int
        let started: Int64
    }

    /// The replica for the next hop, avoiding those in `history`; throws `.circuitOpen`
    /// when every replica is ejected, `.noReplicas` when there is none.
    func lease(avoiding history: ReplicaHistory?) throws(PocketError) -> Lease {
        let time = now()
        // The lease is made under the lock: the list is not copied out.
        var choice = ReplicaSetState.Choice.empty
        if let lease = state.withLock({ inner -> Lease? in
            choice = inner.set.choose(at: time, avoiding: history?.used(generation: inner.set.generation) ?? 0)
            guard case .replica(let index, _) = choice else { return nil }
            return Lease(endpoint: moves ? inner.set.endpoint(at: index) : nil, index: index,
                         generation: inner.set.generation, started: time)
        }) {
            return lease
        }
        let (count, problem) = state.withLock { ($0.set.replicas.count, $0.discoveryProblem) }
        switch choice {
        case .replica:
            preconditionFailure("a replica's lease is made under the lock")
        case .circuitOpen(let ejected, let dueIn):
            let what = moves ? "every replica of '\(name)' is ejected (\(ejected) of \(count))"
                : "\(name) is ejected after failing"
            let when = dueIn > .zero ? "the first is due back in \(dueIn)" : "a probe to it is in flight"
            throw PocketError(.circuitOpen, "\(what): the circuit is open; \(when)")
        case .empty:
            throw PocketError(.noReplicas, "the replica set '\(name)' has no replicas\(problem.map { " (\($0))" } ?? "")")
        }
    }

    /// The end of a leased hop: `failure` nil for a cancelled one.
    func finish(_ lease: Lease, failure: Bool?) {
        let time = now()
        let event = state.withLock { inner -> PocketReplicaEvent? in
            let change = inner.set.finish(lease.endpoint, index: lease.index, generation: lease.generation, failure: failure,
                                          latencyNanos: time - lease.started, at: time)
            switch change {
            case .none: return nil
            case .ejected(let endpoint, let length): return self.makeEvent(.ejected, endpoint, length, inner)
            case .restored(let endpoint): return self.makeEvent(.restored, endpoint, nil, inner)
            }
        }
        if let event { notify(event) }
    }

    /// Whether `status` counts as a failure for the breaker.
    func isFailure(status: Int) -> Bool {
        ejection?.failureStatuses.contains(status) ?? (status >= 500)
    }

    // MARK: observing

    /// Calls `handler` for each ejection, restoration and change of the
    /// list, on the thread where it happened (keep it short).
    public func addObserver(_ handler: @escaping @Sendable (PocketReplicaEvent) -> Void) {
        state.withLock { $0.observers.append(handler) }
    }

    /// Each replica's load, latency, counts and state, in list order.
    public var statistics: [PocketReplicaStatistics] {
        let time = now()
        return state.withLock { inner in
            inner.set.replicas.map {
                PocketReplicaStatistics(endpoint: $0.endpoint, outstanding: $0.outstanding,
                                        latency: .nanoseconds(Int64($0.latency.value(at: time))), requests: $0.requests,
                                        failures: $0.failures, ejections: $0.ejections, isEjected: $0.health.isOut)
            }
        }
    }

    private func makeEvent(_ kind: PocketReplicaEvent.Kind, _ endpoint: PocketReplicaEndpoint?, _ length: Duration?,
                       _ inner: Inner) -> PocketReplicaEvent {
        PocketReplicaEvent(kind: kind, set: name, replica: endpoint, ejectedFor: length,
                           ejectedCount: inner.set.replicas.reduce(0) { $0 + ($1.health.isOut ? 1 : 0) },
                           replicaCount: inner.set.replicas.count)
    }

    private func notify(_ event: PocketReplicaEvent) {
        for observer in state.withLock({ $0.observers }) { observer(event) }
    }
}
