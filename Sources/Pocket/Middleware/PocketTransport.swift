/// What carries a request and brings back its response: the client's engine
/// by default, or a `PocketStubTransport` for tests with no network. The whole
/// request pipeline (middleware, retries, events) runs on top of it.
public protocol PocketTransport: Sendable {
    /// Sends `request` and returns the complete response, or throws.
    func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse
}
