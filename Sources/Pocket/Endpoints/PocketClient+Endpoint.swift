extension PocketClient {
    /// Sends `endpoint` (built by `endpoint.request(on:)`) through the client's
    /// request path (its retry policy, middleware and observer key included) and
    /// returns what its `process` makes of the response.
    ///
    /// ```swift
    /// let issue = try await client.send(GetIssue(id: 42))
    /// ```
    public func send<E: PocketEndpoint>(_ endpoint: E, progress: PocketProgressHandler? = nil) async throws -> E.Output {
        let request = try endpoint.request(on: self)
        let response = try await send(request, options: endpoint.sendOptions(), progress: progress)
        return try endpoint.process(response)
    }
}

extension PocketRequestQueue {
    /// Queues `endpoint` (see `PocketClient.send(_:progress:)` for endpoints)
    /// and returns its processed output.
    public func send<E: PocketEndpoint>(_ endpoint: E, priority: PocketQueuePriority = .normal) async throws -> E.Output {
        let request = try endpoint.request(on: client)
        return try endpoint.process(try await send(request, priority: priority, options: endpoint.sendOptions()))
    }
}
