/// A middleware whose `observe` has work only for some attempts (the
/// tracing middleware's: only when its `adapt` started a span). Asked after
/// each attempt, before any `observe`: an attempt none of whose observers
/// has work returns its response at once, as with no observer.
package protocol PocketAttemptObserver: PocketMiddleware {
    /// Whether `observe` has work for the attempt `context` describes.
    func observes(_ context: PocketMiddlewareContext) -> Bool
}
