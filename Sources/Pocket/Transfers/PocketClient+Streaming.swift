extension PocketClient {
    /// Sends `request` and returns as soon as the response head arrives; the
    /// body is read from `response.body` as it comes.
    ///
    /// At most `bufferSize` bytes (256 KiB by default) wait for the reader;
    /// past that the engine stops reading the socket until the reader
    /// catches up (real backpressure: memory stays bounded however fast the
    /// server sends). `Configuration.limits.maxBodyBytes` does not apply —
    /// bound what you keep with `collect(upTo:)`. Errors before the head are
    /// thrown here; errors in the body end the body's iteration.
    public func stream(_ request: Request, bufferSize: Int = 256 << 10,
                       progress: ProgressHandler? = nil) async throws -> StreamingResponse {
        let state = BodyStreamState(highWater: bufferSize)
        let inflight = InFlightRequest(engine: engine, delivery: .stream(state), progress: progress)
        state.request = inflight
        let body = ResponseBodyStream(state)
        let head = try await run(request, inflight)
        return StreamingResponse(status: head.status, reason: head.reason, httpMinorVersion: head.httpMinorVersion,
                                 headers: head.headers, body: body)
    }
}
