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
public protocol Middleware: Sendable {
    /// Returns the request to send for this attempt. Throwing fails the
    /// attempt with that error (the retry policy sees it). Default: unchanged.
    func adapt(_ request: Request, context: MiddlewareContext) async throws -> Request

    /// Sees the outcome of an attempt: the response (any status) or the error.
    /// `request` is the request as sent. Default: nothing.
    func observe(_ outcome: Result<Response, any Error>, for request: Request, context: MiddlewareContext) async

    /// Says whether to retry; nil (the default) leaves it to the next
    /// middleware, then to the retry policy. A middleware's `.retry` is not
    /// limited by the policy's `maxAttempts` (only by
    /// `RequestHandling.maxAttempts`), so it must guard itself. Throwing
    /// ends the request with that error.
    func retry(_ outcome: Result<Response, any Error>, for request: Request,
               context: MiddlewareContext) async throws -> RetryDecision?
}

extension Middleware {
    public func adapt(_ request: Request, context: MiddlewareContext) async throws -> Request { request }
    public func observe(_ outcome: Result<Response, any Error>, for request: Request, context: MiddlewareContext) async {}
    public func retry(_ outcome: Result<Response, any Error>, for request: Request,
                      context: MiddlewareContext) async throws -> RetryDecision? { nil }
}

/// A middleware made of closures, for one-off hooks.
///
/// ```swift
/// config.handling.middleware.append(ClosureMiddleware(adapt: { request, _ in
///     var request = request; request.headers["X-Trace"] = UUID().uuidString; return request
/// }))
/// ```
public struct ClosureMiddleware: Middleware {
    let adaptBody: (@Sendable (Request, MiddlewareContext) async throws -> Request)?
    let observeBody: (@Sendable (Result<Response, any Error>, Request, MiddlewareContext) async -> Void)?
    let retryBody: (@Sendable (Result<Response, any Error>, Request, MiddlewareContext) async throws -> RetryDecision?)?

    /// Any hook left nil does nothing.
    public init(adapt: (@Sendable (Request, MiddlewareContext) async throws -> Request)? = nil,
                observe: (@Sendable (Result<Response, any Error>, Request, MiddlewareContext) async -> Void)? = nil,
                retry: (@Sendable (Result<Response, any Error>, Request, MiddlewareContext) async throws -> RetryDecision?)? = nil) {
        adaptBody = adapt
        observeBody = observe
        retryBody = retry
    }

    public func adapt(_ request: Request, context: MiddlewareContext) async throws -> Request {
        try await adaptBody?(request, context) ?? request
    }

    public func observe(_ outcome: Result<Response, any Error>, for request: Request, context: MiddlewareContext) async {
        await observeBody?(outcome, request, context)
    }

    public func retry(_ outcome: Result<Response, any Error>, for request: Request,
                      context: MiddlewareContext) async throws -> RetryDecision? {
        try await retryBody?(outcome, request, context)
    }
}
