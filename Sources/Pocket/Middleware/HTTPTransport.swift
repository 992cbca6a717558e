/// What carries a request and brings back its response: the client's engine
/// by default, or a `StubTransport` for tests with no network. The whole
/// request pipeline (middleware, retries, events) runs on top of it.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the complete response, or throws.
    func send(_ request: Request, progress: ProgressHandler?) async throws -> Response
}
