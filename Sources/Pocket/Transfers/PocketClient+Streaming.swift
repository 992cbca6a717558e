extension PocketClient {
    /// Sends `request` and returns as soon as the response head arrives; the
    /// body is read from `response.body` as it comes.
    ///
    /// At most `bufferSize` bytes (256 KiB by default) wait for the reader;
    /// past that the engine stops reading the socket until the reader
    /// catches up (real backpressure: memory stays bounded however fast the
    /// server sends). `Configuration.limits.maxBodyBytes` does not apply —
    /// bound what you keep with `collect(upTo:)`. Errors before the head are
    /// thrown here; errors in the body end the body's iteration. Redirects
    /// are followed as for `send` (a 3xx body of up to 64 KiB is read and
    /// dropped so its connection is reused).
    public func stream(_ request: PocketRequest, bufferSize: Int = 256 << 10,
                       progress: PocketProgressHandler? = nil) async throws -> PocketStreamingResponse {
        try await followingRedirects(request, progress: progress) { request, progress in
            let state = BodyStreamState(highWater: bufferSize)
            let inflight = InFlightRequest(engine: engine, delivery: .stream(state), progress: progress)
            state.request = inflight
            let body = PocketResponseBodyStream(state)
            let head = try await run(request, inflight)
            return PocketStreamingResponse(status: head.status, reason: head.reason, httpMinorVersion: head.httpMinorVersion,
                                     headers: head.headers, body: body)
        }
    }
}
