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
/// struct APIKey: Middleware {
///     func adapt(_ request: Request, context: MiddlewareContext) async throws -> Request {
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
    /// middleware, then to the retry policy. A middleware's `.retry` is not
    /// limited by the policy's `maxAttempts` (only by
    /// `PocketRequestHandling.maxAttempts`), so it must guard itself. Throwing
    /// ends the request with that error.
    func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
               context: PocketMiddlewareContext) async throws -> PocketRetryDecision?
}

extension PocketMiddleware {
    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest { request }
    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {}
    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? { nil }
}

/// A middleware made of closures, for one-off hooks.
///
/// ```swift
/// config.handling.middleware.append(ClosureMiddleware(adapt: { request, _ in
///     var request = request; request.headers["X-Trace"] = UUID().uuidString; return request
/// }))
/// ```
public struct PocketClosureMiddleware: PocketMiddleware {
    let adaptBody: (@Sendable (PocketRequest, PocketMiddlewareContext) async throws -> PocketRequest)?
    let observeBody: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async -> Void)?
    let retryBody: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async throws -> PocketRetryDecision?)?

    /// Any hook left nil does nothing.
    public init(adapt: (@Sendable (PocketRequest, PocketMiddlewareContext) async throws -> PocketRequest)? = nil,
                observe: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async -> Void)? = nil,
                retry: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async throws -> PocketRetryDecision?)? = nil) {
        adaptBody = adapt
        observeBody = observe
        retryBody = retry
    }

    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
        try await adaptBody?(request, context) ?? request
    }

    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {
        await observeBody?(outcome, request, context)
    }

    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? {
        try await retryBody?(outcome, request, context)
    }
}
