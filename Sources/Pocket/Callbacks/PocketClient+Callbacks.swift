extension PocketClient {
    /// A call for `request`, not started: attach handlers, then `start()`.
    /// Handlers run on `queue` (`.task` by default: see `CallbackQueue`).
    public func call(_ request: Request, on queue: CallbackQueue = .task) -> Call {
        Call(client: self, request: request, queue: queue)
    }

    /// Sends `request` and calls `success` with a 2xx response or `failure`
    /// with the error (and the response, when the server answered), on
    /// `queue`. MTPocket's `sendWithSuccess:failure:uploadProgress:downloadProgress:`.
    ///
    /// ```swift
    /// client.send(request, success: { response in print(response.text) },
    ///             failure: { error, response in print(error) })
    /// ```
    ///
    /// Returns the started `Call`: attach more handlers or `cancel()` it.
    @discardableResult
    public func send(_ request: Request, on queue: CallbackQueue = .task,
                     success: @escaping Call.SuccessHandler, failure: @escaping Call.FailureHandler,
                     uploadProgress: Call.ProgressReport? = nil, downloadProgress: Call.ProgressReport? = nil) -> Call {
        let call = Call(client: self, request: request, queue: queue).onSuccess(success).onFailure(failure)
        if let uploadProgress { call.onUploadProgress(uploadProgress) }
        if let downloadProgress { call.onDownloadProgress(downloadProgress) }
        return call.start()
    }
}
