extension PocketClient {
    /// Sends `request` through the client's pipeline with per-request
    /// `options`: extra middleware, a retry policy, observers, an endpoint key.
    /// Otherwise as `send(_:progress:)`.
    public func send(_ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler? = nil) async throws -> PocketResponse {
        try await sendThroughPipeline(request, options: options, progress: progress,
                                      sink: pipeline.sink(for: request, options: options))
    }

    /// The pipeline's final response, validated (as `send` validates) and
    /// keeping the request as last sent.
    func sendThroughPipeline(_ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?,
                             sink: EventSink) async throws -> PocketResponse {
        let response = try await pipeline.send(request, options: options, progress: progress, client: self, sink: sink)
        return try completed(response, for: response.request ?? request)
    }

    /// The client's task events (every state change of every request sent
    /// through it, queues included) as an `AsyncSequence`. Each call makes a
    /// new subscription that keeps the newest `bufferingNewest` events (1024
    /// by default, so a slow reader costs bounded memory) and ends when the
    /// stream is dropped or the client shuts down. While any subscription or
    /// endpoint observer exists, plain sends run through the pipeline.
    public func events(bufferingNewest: Int = 1024) -> AsyncStream<PocketTaskEvent> {
        pipeline.hub.subscribe(bufferingNewest: bufferingNewest)
    }

    /// Calls `handler` for events of every task whose endpoint key is
    /// `endpoint` (STNetTaskQueue's `addTaskDelegate:uri:`): the URL path
    /// for plain requests, the path template for `PocketEndpoint`s. Several
    /// observers per endpoint are kept, in order. Returns a token for `removeObserver`.
    @discardableResult
    public func addObserver(endpoint: String, states: Set<PocketTaskState> = Set(PocketTaskState.allCases),
                            _ handler: @escaping @Sendable (PocketTaskEvent) -> Void) -> PocketObserverToken {
        pipeline.hub.addObserver(endpoint: endpoint, PocketTaskObserver(states: states, handler))
    }

    /// Stops an observer added with `addObserver`. Unknown tokens are ignored.
    public func removeObserver(_ token: PocketObserverToken) {
        pipeline.hub.removeObserver(token)
    }

    /// The engine path of `send` (redirects followed within one attempt), under the pipeline.
    func sendDirect(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await sendFollowingRedirects(request, progress: progress)
    }
}
