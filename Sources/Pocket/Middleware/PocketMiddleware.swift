/// A step in a client's request pipeline: adapt the request, observe the
/// outcome, decide on a retry. Every hook has a default that does nothing,
/// so a middleware implements only what it needs.
///
/// Middleware run in order for `adapt` (the first installed adapts first),
/// in reverse for `observe` (the first installed sees the outcome last, like
/// the layers of an onion), and in order for `retry` (the first opinion wins;
/// without one, the retry policy decides). Hooks run once per attempt.
///
/// ```swift
/// struct APIKey: PocketMiddleware {
///     func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
///         var request = request
///         request.headers["X-API-Key"] = "secret"
///         return request
///     }
/// }
/// ```
public protocol PocketMiddleware: Sendable {
    /// Returns the request to send for this attempt. Throwing fails the
    /// attempt with that error (the retry policy sees it). Default: unchanged.
    func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest

    /// Sees the outcome of an attempt: the response (any status) or the error.
    /// `request` is the request as sent. Default: nothing.
    func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async

    /// Says whether to retry; nil (the default) leaves it to the next
    /// middleware, then to the retry policy. A middleware's `.retry` counts
    /// against the retry policy's `maxAttempts` (3 without a policy), as the
    /// policy's own retries do. Throwing ends the request with that error.
    func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
               context: PocketMiddlewareContext) async throws -> PocketRetryDecision?

    /// The hooks this middleware implements: the chain calls only these.
    /// Read once, when the chain is built (when the client is made, or
    /// for a request that brings middleware of its own). Default: all
    /// three. A middleware that has nothing to do in a configuration (a
    /// metrics reporter with no backend) declares none and costs nothing:
    /// a request whose hooks observe nothing returns its response without
    /// making an outcome for them.
    var hooks: PocketMiddlewareHooks { get }
}

extension PocketMiddleware {
    /// Every hook (override to declare fewer).
    public var hooks: PocketMiddlewareHooks { .all }

    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest { request }
    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {}
    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? { nil }
}
