/// Injects a bearer token into every request and, when the server rejects
/// it (401 by default), refreshes it once for all concurrent waiters (single
/// flight) and retries the rejected requests with the new token.
///
/// ```swift
/// let auth = PocketTokenRefreshMiddleware(token: cachedToken) { rejected in
///     try await fetchNewToken()          // called once however many requests got 401
/// }
/// config.handling.middleware = [auth]
/// ```
///
/// Loop guards: each request is refreshed-and-retried at most
/// `maxRefreshesPerRequest` times (1 by default; a second 401 is returned
/// as the response); requests made inside the refresh closure are neither
/// given the token nor refreshed again (a rejected refresh call cannot
/// recurse); a refresh that returns the token just rejected fails with
/// `.tokenRefreshLoop`. A refresh that throws fails the waiting requests
/// with `.tokenRefreshFailed`.
public final class PocketTokenRefreshMiddleware: PocketMiddleware {
    private struct State {
        var token: String?
        var inFlight: Task<String, any Error>?
        var refreshes = 0
    }

    @TaskLocal static var isRefreshing = false
    private static let countKey = "pocket.token-refresh.count"

    private let state: Lock<State>
    private let header: String
    private let prefix: String
    private let refreshStatuses: Set<Int>
    private let maxRefreshesPerRequest: Int
    private let refreshToken: @Sendable (_ rejected: String?) async throws -> String

    /// - Parameters:
    ///   - header: the field carrying the token, `Authorization` by default.
    ///   - prefix: written before the token, `"Bearer "` by default (RFC 6750).
    ///   - token: the token to start with; nil (the default) refreshes before the first request.
    ///   - refreshStatuses: statuses that mean "token rejected", 401 by default.
    ///   - maxRefreshesPerRequest: refresh-and-retry rounds per request, 1 by default.
    ///   - refresh: returns a new token; gets the rejected one (nil at start).
    public init(header: String = "Authorization", prefix: String = "Bearer ", token: String? = nil,
                refreshStatuses: Set<Int> = [401], maxRefreshesPerRequest: Int = 1,
                refresh: @escaping @Sendable (_ rejected: String?) async throws -> String) {
        self.state = Lock(State(token: token))
        self.header = header
        self.prefix = prefix
        self.refreshStatuses = refreshStatuses
        self.maxRefreshesPerRequest = max(0, maxRefreshesPerRequest)
        self.refreshToken = refresh
    }

    /// The current token, if one is known.
    public var token: String? { state.withLock { $0.token } }

    /// How many refreshes have run (each shared by all its waiters).
    public var refreshCount: Int { state.withLock { $0.refreshes } }

    /// `adapt` and `retry`.
    public var hooks: PocketMiddlewareHooks { [.adapt, .retry] }

    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
        if Self.isRefreshing { return request }
        let current = state.withLock { $0.inFlight == nil ? $0.token : nil }
        let token: String
        if let current { token = current } else { token = try await refreshed(rejecting: nil) }
        var request = request
        request.headers[header] = prefix + token
        return request
    }

    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? {
        guard !Self.isRefreshing, case .success(let response) = outcome, refreshStatuses.contains(response.status)
        else { return nil }
        let rounds = context[Self.countKey] as? Int ?? 0
        guard rounds < maxRefreshesPerRequest else { return nil }
        context[Self.countKey] = rounds + 1
        var rejected = request.headers[header]
        if let r = rejected, r.hasPrefix(prefix) { rejected = String(r.dropFirst(prefix.count)) }
        _ = try await refreshed(rejecting: rejected)
        return .retryAfter(.zero)
    }

    /// A token other than `rejected`: the current one if it already changed,
    /// else the result of the one refresh in flight (started here if none is).
    func refreshed(rejecting rejected: String?) async throws -> String {
        enum Source { case current(String), refresh(Task<String, any Error>) }
        let source: Source = state.withLock { s in
            if let inFlight = s.inFlight { return .refresh(inFlight) }
            if let token = s.token, token != rejected { return .current(token) }
            s.refreshes += 1
            let refresh = refreshToken
            let task = Task<String, any Error> { [state] in
                do {
                    let token = try await Self.$isRefreshing.withValue(true) { try await refresh(rejected) }
                    if let rejected, token == rejected {
                        throw PocketError(.tokenRefreshLoop, "the token refresh returned the token the server just rejected")
                    }
                    state.withLock { $0.token = token; $0.inFlight = nil }
                    return token
                } catch {
                    state.withLock { $0.inFlight = nil }
                    if let pocket = error as? PocketError, pocket.code == .tokenRefreshLoop { throw pocket }
                    throw PocketError(.tokenRefreshFailed, "refreshing the token failed: \(error)", underlying: error)
                }
            }
            s.inFlight = task
            return .refresh(task)
        }
        switch source {
        case .current(let token): return token
        case .refresh(let task): return try await task.value
        }
    }
}
