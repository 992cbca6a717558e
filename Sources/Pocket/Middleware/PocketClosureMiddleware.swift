/// A middleware made of closures, for one-off hooks.
///
/// ```swift
/// config.handling.middleware.append(PocketClosureMiddleware(adapt: { request, _ in
///     var request = request; request.headers["X-Trace"] = UUID().uuidString; return request
/// }))
/// ```
public struct PocketClosureMiddleware: PocketMiddleware {
    // nonisolated(nonsending): the closure runs on the caller's executor,
    // entered without the two executor switches of a concurrent one.
    typealias Adapt = nonisolated(nonsending) @Sendable (PocketRequest, PocketMiddlewareContext) async throws -> PocketRequest
    let adaptBody: Adapt?
    let observeBody: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async -> Void)?
    let retryBody: (@Sendable (Result<PocketResponse, any Error>, PocketRequest, PocketMiddlewareContext) async throws -> PocketRetryDecision?)?

    /// Any hook left nil does nothing.
    public init(adapt: (nonisolated(nonsending) @Sendable (PocketRequest, PocketMiddlewareContext) async throws -> PocketRequest)? = nil,
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

    /// The hooks given as closures.
    public var hooks: PocketMiddlewareHooks {
        var hooks: PocketMiddlewareHooks = []
        if adaptBody != nil { hooks.insert(.adapt) }
        if observeBody != nil { hooks.insert(.observe) }
        if retryBody != nil { hooks.insert(.retry) }
        return hooks
    }
}
