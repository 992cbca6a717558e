/// The chain a request runs through: the middleware, the retry policy last,
/// and which of them have an `adapt`, an `observe` and a `retry` to call
/// (`PocketMiddleware.hooks`: a `PocketClosureMiddleware` without that
/// closure, the retry policy's `adapt` and `observe`, a middleware that
/// declares it has nothing to do). The request path neither calls the
/// others nor builds what they would be handed. Built once per client;
/// again for a request that brings middleware or a policy of its own.
// A class: a request takes it with one retain, not a copy of its arrays
// and of the policy's sets and closures.
final class MiddlewareChain: Sendable {
    /// Every middleware, the retry policy last.
    let all: [any PocketMiddleware]
    /// The retry policy, also `all`'s last (nil without one).
    let policy: PocketRetryPolicy?
    /// Those whose `adapt` does something, in order: a closure
    /// middleware's closure is called directly (not through its `adapt`,
    /// one async call less), others by index.
    let adapters: [Adapter]

    enum Adapter: Sendable {
        case closure(PocketClosureMiddleware.Adapt)
        case middleware(Int)
    }
    /// Indices of those whose `observe` does something, in order (called in reverse).
    let observers: [Int]
    /// For each of `observers`, the one that says per attempt whether it
    /// has work (`PocketAttemptObserver`), nil for one that always has.
    let observerGates: [(any PocketAttemptObserver)?]
    /// Whether some observer has work after every attempt.
    let alwaysObserves: Bool
    /// Those asked `retry`, in order (the policy last).
    let retriers: [any PocketMiddleware]
    /// When every middleware with a hook can say per request whether it
    /// has work (`PocketRequestGate`) and none retries: those with a hook.
    /// Nil otherwise, and for a chain without middleware.
    let requestGates: [any PocketRequestGate]?

    init(_ middleware: [any PocketMiddleware], policy: PocketRetryPolicy?) {
        all = policy.map { middleware + [$0] } ?? middleware
        self.policy = policy
        var adapters: [Adapter] = [], observers: [Int] = [], retriers: [any PocketMiddleware] = []
        var gates: [(any PocketAttemptObserver)?] = []
        var requestGates: [any PocketRequestGate]? = all.isEmpty ? nil : []
        for (i, m) in all.enumerated() {
            let hooks = m.hooks
            if !hooks.isEmpty {
                if !hooks.contains(.retry), let gate = m as? any PocketRequestGate {
                    requestGates?.append(gate)
                } else {
                    requestGates = nil
                }
            }
            if hooks.contains(.retry) { retriers.append(m) }
            if let closures = m as? PocketClosureMiddleware, let adapt = closures.adaptBody {
                adapters.append(.closure(adapt))
            } else if hooks.contains(.adapt) {
                adapters.append(.middleware(i))
            }
            if hooks.contains(.observe) {
                observers.append(i)
                gates.append(m as? any PocketAttemptObserver)
            }
        }
        self.adapters = adapters
        self.observers = observers
        observerGates = gates
        alwaysObserves = gates.contains { $0 == nil }
        self.retriers = retriers
        self.requestGates = requestGates
    }

    /// Whether some middleware has work for `request`: false only for a
    /// chain of request gates (`requestGates`) none of which engages it.
    func engages(_ request: PocketRequest) -> Bool {
        guard let requestGates else { return true }
        return requestGates.contains { $0.engages(request) }
    }

    /// Whether any observer has work for the attempt `context` describes.
    func observes(_ context: PocketMiddlewareContext) -> Bool {
        alwaysObserves || observerGates.contains { $0?.observes(context) ?? true }
    }
}
