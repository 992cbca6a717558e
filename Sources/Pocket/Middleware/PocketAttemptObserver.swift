/// A middleware whose `observe` has work only for some attempts (the
/// tracing middleware's: only when its `adapt` started a span). Asked after
/// each attempt, before any `observe`: an attempt none of whose observers
/// has work returns its response at once, as with no observer.
package protocol PocketAttemptObserver: PocketMiddleware {
    /// Whether `observe` has work for the attempt `context` describes.
    func observes(_ context: PocketMiddlewareContext) -> Bool
}

/// A middleware that can say, before a request's first attempt, whether it
/// has any work for the request (the tracing middleware: only under a
/// tracer, or a deadline in the task's `ServiceContext`). When every
/// middleware of a client's chain can say so, it has no retry hook and no
/// retry policy is set, a request none of them engages takes the path of a
/// client without middleware: no middleware context, no `adapt` or
/// `observe` call. Asked once per request, so it must be cheap.
package protocol PocketRequestGate: PocketMiddleware {
    /// Whether `adapt` or `observe` has work for `request`.
    func engages(_ request: PocketRequest) -> Bool
}
