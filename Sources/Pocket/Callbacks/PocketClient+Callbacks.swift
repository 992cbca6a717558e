#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketClient {
    /// A call for `request`, not started: attach handlers, then `start()`.
    /// Handlers run on `queue` (`.task` by default: see `PocketCallbackQueue`).
    public func call(_ request: PocketRequest, on queue: PocketCallbackQueue = .task) -> PocketCall {
        PocketCall(client: self, request: request, queue: queue)
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
    /// Returns the started `PocketCall`: attach more handlers or `cancel()` it.
    @discardableResult
    public func send(_ request: PocketRequest, on queue: PocketCallbackQueue = .task,
                     success: @escaping PocketCall.SuccessHandler, failure: @escaping PocketCall.FailureHandler,
                     uploadProgress: PocketCall.ProgressReport? = nil, downloadProgress: PocketCall.ProgressReport? = nil) -> PocketCall {
        let call = PocketCall(client: self, request: request, queue: queue).onSuccess(success).onFailure(failure)
        if let uploadProgress { call.onUploadProgress(uploadProgress) }
        if let downloadProgress { call.onDownloadProgress(downloadProgress) }
        return call.start()
    }
}

extension PocketClient {
    /// Uploads `data` as the file part `formField` of a multipart form sent
    /// with `request` (its method, or POST when it is GET or HEAD), and calls
    /// `success` or `failure` on `queue`: MTPocket's
    /// `sendFileData:filename:formField:MIMEType:success:failure:`.
    ///
    /// ```swift
    /// client.sendFileData(jpeg, fileName: "test.jpg", formField: "files[]", mimeType: "image/jpeg",
    ///                     with: try client.request(.post, "photos"),
    ///                     success: { _ in print("Uploaded") }, failure: { error, _ in print(error) })
    /// ```
    ///
    /// `mimeType` nil infers it from the file name's extension. Returns the
    /// started `PocketCall`.
    @discardableResult
    public func sendFileData(_ data: Data, fileName: String, formField: String, mimeType: String?,
                             with request: PocketRequest, on queue: PocketCallbackQueue = .task,
                             success: @escaping PocketCall.SuccessHandler, failure: @escaping PocketCall.FailureHandler,
                             uploadProgress: PocketCall.ProgressReport? = nil) -> PocketCall {
        var form = PocketMultipartForm()
        form.addData(formField, data, fileName: fileName, contentType: mimeType)
        var upload = request
        if upload.method == .get || upload.method == .head { upload.method = .post }
        upload.headers.remove("Content-Type")
        upload.body = .multipart(form)
        return send(upload, on: queue, success: success, failure: failure, uploadProgress: uploadProgress)
    }
}
