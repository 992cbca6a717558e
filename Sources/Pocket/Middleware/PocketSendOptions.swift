/// Options for one `send`: its own middleware, retry and hedging policies,
/// observers and endpoint key. The defaults add nothing to the client's configuration.
public struct PocketSendOptions: Sendable {
    /// Middleware for this request, run after the client's. Empty by default.
    public var middleware: [any PocketMiddleware] = []
    /// Replaces the client's retry policy for this request; nil keeps it.
    public var retry: PocketRetryPolicy? {
        get { policies?.retry }
        set { policies = Policies.make(retry: newValue, hedging: hedging) }
    }
    /// Replaces the client's hedging policy for this request; nil keeps it.
    public var hedging: PocketHedgingPolicy? {
        get { policies?.hedging?.policy }
        set { policies = Policies.make(retry: retry, hedging: newValue) }
    }
    /// `hedging`, as the request path carries it.
    var hedgingBox: HedgingPolicyBox? { policies?.hedging }
    /// Neither a retry nor a hedging policy of its own (one nil check).
    var hasNoPolicies: Bool { policies == nil }
    // Boxed: a policy is over a hundred bytes, and the options are passed
    // (and copied) on every send, which almost never sets one.
    private var policies: Policies?
    private final class Policies: Sendable {
        let retry: PocketRetryPolicy?
        let hedging: HedgingPolicyBox?
        init(_ retry: PocketRetryPolicy?, _ hedging: PocketHedgingPolicy?) {
            (self.retry, self.hedging) = (retry, hedging.map(HedgingPolicyBox.init))
        }
        static func make(retry: PocketRetryPolicy?, hedging: PocketHedgingPolicy?) -> Policies? {
            retry == nil && hedging == nil ? nil : Policies(retry, hedging)
        }
    }
    /// Observers of this task's events. None by default.
    public var observers: [PocketTaskObserver] = []
    /// The key endpoint observers subscribe to; nil (the default) uses the URL's path.
    public var endpoint: String?

    /// The defaults: nothing added to the client's configuration. (`send`'s
    /// default options: no policy is passed in only to be dropped.)
    public init() {}

    /// Options; each parameter defaults as its property says.
    public init(middleware: [any PocketMiddleware] = [], retry: PocketRetryPolicy? = nil, observers: [PocketTaskObserver] = [],
                endpoint: String? = nil, hedging: PocketHedgingPolicy? = nil) {
        self.middleware = middleware
        if retry != nil || hedging != nil { self.policies = Policies(retry, hedging) }
        self.observers = observers
        self.endpoint = endpoint
    }
}
