/// Options for one `send`: its own middleware, retry policy, observers and
/// endpoint key. The defaults add nothing to the client's configuration.
public struct PocketSendOptions: Sendable {
    /// Middleware for this request, run after the client's. Empty by default.
    public var middleware: [any PocketMiddleware] = []
    /// Replaces the client's retry policy for this request; nil keeps it.
    public var retry: PocketRetryPolicy? {
        get { retryBox?.policy }
        set { retryBox = newValue.map(RetryBox.init) }
    }
    // Boxed: a policy is over a hundred bytes, and the options are passed
    // (and copied) on every send, which almost never sets one.
    private var retryBox: RetryBox?
    private final class RetryBox: Sendable {
        let policy: PocketRetryPolicy
        init(_ policy: PocketRetryPolicy) { self.policy = policy }
    }
    /// Observers of this task's events. None by default.
    public var observers: [PocketTaskObserver] = []
    /// The key endpoint observers subscribe to; nil (the default) uses the URL's path.
    public var endpoint: String?

    /// Options; each parameter defaults as its property says.
    public init(middleware: [any PocketMiddleware] = [], retry: PocketRetryPolicy? = nil, observers: [PocketTaskObserver] = [],
                endpoint: String? = nil) {
        self.middleware = middleware
        self.retryBox = retry.map(RetryBox.init)
        self.observers = observers
        self.endpoint = endpoint
    }
}
