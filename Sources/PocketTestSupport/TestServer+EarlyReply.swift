/// A routed handler and when it runs.
struct Route: Sendable {
    var handler: TestServer.Handler
    /// Answer right after the head, without reading the body, then close.
    var respondsBeforeBody = false
}

extension TestServer {
    /// Routes requests whose path equals `path`, like `route(_:_:)`; with
    /// `respondsBeforeBody` the handler runs as soon as the request head is
    /// read and its reply is sent without reading the body (for testing a
    /// client that gets e.g. `413` while still uploading).
    ///
    /// Such a request is recorded with an empty `body`, `bodyLength` 0 and
    /// `answeredBeforeBody` true. `Expect: 100-continue` gets no `100
    /// Continue` (the early reply is the final answer). The reply announces
    /// `Connection: close`; then the server half-closes (FIN) and reads and
    /// discards what the client still sends for up to 1 s (or until it
    /// closes), so the client sees the response rather than a reset, and
    /// closes. Replaces an earlier handler for the same path.
    public func route(_ path: String, respondsBeforeBody: Bool, _ handler: @escaping Handler) {
        core.locked { core.routes[path] = Route(handler: handler, respondsBeforeBody: respondsBeforeBody) }
    }
}

extension ServerConnection {
    /// Plays the reply of a `respondsBeforeBody` route to a request whose
    /// body was not read, then closes with a 1 s drain.
    func answerBeforeBody(_ head: RequestHead, rawHead: [UInt8], requestIndex: Int, handler: TestServer.Handler) {
        let request = TestServer.Request(head: head, rawHead: rawHead, body: ReceivedBody(keep: false),
                                         answeredBeforeBody: true, connectionIndex: index, requestIndex: requestIndex)
        _ = core.record(request)
        var unused = InputBuffer()
        let steps = handler(request).steps(method: request.method, forceClose: true)
        if play(steps, &unused, drainMilliseconds: 1000) {
            closeGracefully(drainMilliseconds: 1000)
        }
    }
}
