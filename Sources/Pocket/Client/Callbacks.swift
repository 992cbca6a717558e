#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch

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

/// A request with handlers attached, sent when `start()` is called: the
/// callback style of MTPocket and AFNetworking, as a thin layer over
/// `PocketClient.send`.
///
/// Any number of handlers of each kind can be attached, so a library can
/// build a call, attach the handlers that build its objects and return it,
/// and the app attaches its own before starting it:
///
/// ```swift
/// let call = client.call(request, on: .dispatch(uiQueue))
///     .onSuccess { response in cache.store(response.body) }       // the library's
/// call.onSuccess { response in show(response.text) }              // the app's
///     .onFailure { error, response in report(error) }
///     .onDownloadProgress { p in bar.progress = p.fraction ?? 0 }
///     .start()
/// ```
///
/// When the call ends, its completion handlers run first, then its success
/// handlers (2xx) or its failure handlers (anything else: a transport error,
/// `.cancelled`, or another status, with the response when there is one),
/// each kind in the order attached, all on the call's `PocketCallbackQueue`, after
/// every progress report. A handler attached after the end runs at once with
/// the outcome. Progress handlers must be attached before `start()`.
public final class PocketCall: Sendable {
    /// Gets a 2xx response.
    public typealias SuccessHandler = @Sendable (PocketResponse) -> Void
    /// Gets the error, and the response when the server answered.
    public typealias FailureHandler = @Sendable (PocketError, PocketResponse?) -> Void
    /// Gets every outcome, before success and failure handlers.
    public typealias CompletionHandler = @Sendable (PocketCallOutcome) -> Void
    /// Gets upload or download progress.
    public typealias ProgressReport = @Sendable (PocketTransferProgress) -> Void

    /// The request this call sends.
    public let request: PocketRequest
    /// Where the handlers run.
    public let queue: PocketCallbackQueue
    private let client: PocketClient

    private struct Handlers {
        var completion: [CompletionHandler] = []
        var success: [SuccessHandler] = []
        var failure: [FailureHandler] = []
        var upload: [ProgressReport] = []
        var download: [ProgressReport] = []
    }

    private enum Phase {
        case idle
        case running(Task<Void, Never>?)
        case done(PocketCallOutcome)
    }

    private struct State {
        var handlers = Handlers()
        var phase = Phase.idle
        var cancelRequested = false
        var waiters: [CheckedContinuation<PocketCallOutcome, Never>] = []
    }

    private enum Event: Sendable {
        case progress(PocketTransferProgress)
        case done(PocketCallOutcome)
    }

    private let state = Lock(State())

    init(client: PocketClient, request: PocketRequest, queue: PocketCallbackQueue) {
        self.client = client
        self.request = request
        self.queue = queue
    }

    // MARK: Handlers

    /// Runs `handler` with every outcome, before the success and failure handlers.
    @discardableResult
    public func onComplete(_ handler: @escaping CompletionHandler) -> PocketCall {
        attach({ $0.completion.append(handler) }, late: handler)
    }

    /// Runs `handler` with a 2xx response.
    @discardableResult
    public func onSuccess(_ handler: @escaping SuccessHandler) -> PocketCall {
        attach({ $0.success.append(handler) }, late: { o in
            if o.isSuccess, let r = o.response { handler(r) }
        })
    }

    /// Runs `handler` with the error, and the response when the server
    /// answered (a status outside 2xx).
    @discardableResult
    public func onFailure(_ handler: @escaping FailureHandler) -> PocketCall {
        attach({ $0.failure.append(handler) }, late: { o in
            if let e = o.error { handler(e, o.response) }
        })
    }

    /// Runs `handler` with upload progress (rate-limited, see `PocketProgressHandler`).
    @discardableResult
    public func onUploadProgress(_ handler: @escaping ProgressReport) -> PocketCall {
        attach({ $0.upload.append(handler) }, late: { _ in })
    }

    /// Runs `handler` with download progress (rate-limited, see `PocketProgressHandler`).
    @discardableResult
    public func onDownloadProgress(_ handler: @escaping ProgressReport) -> PocketCall {
        attach({ $0.download.append(handler) }, late: { _ in })
    }

    private func attach(_ register: (inout Handlers) -> Void, late: @escaping CompletionHandler) -> PocketCall {
        let ended = state.withLock { s -> PocketCallOutcome? in
            if case .done(let outcome) = s.phase { return outcome }
            register(&s.handlers)
            return nil
        }
        if let ended {
            let delivery = CallbackDelivery<PocketCallOutcome>(queue, handle: late)
            delivery.send(ended)
            delivery.finish()
        }
        return self
    }

    // MARK: Running

    /// Sends the request. A second call does nothing.
    @discardableResult
    public func start() -> PocketCall {
        let progressWanted = state.withLock { s -> Bool? in
            guard case .idle = s.phase else { return nil }
            s.phase = .running(nil)
            return !s.handlers.upload.isEmpty || !s.handlers.download.isEmpty
        }
        guard let progressWanted else { return self }
        let delivery = CallbackDelivery<Event>(queue) { [self] event in handle(event) }
        let progress = progressWanted ? PocketProgressHandler { delivery.send(.progress($0)) } : nil
        let (client, request) = (self.client, self.request)
        let task = Task {
            let outcome: PocketCallOutcome
            do {
                if self.state.withLock({ $0.cancelRequested }) {
                    throw PocketError(.cancelled, "the call was cancelled before it started")
                }
                let response = try await client.send(request, progress: progress)
                do {
                    try response.validate(.status()) // success is 2xx, as in MTPocket
                    outcome = PocketCallOutcome(response: response, error: nil)
                } catch let error as PocketError {
                    outcome = PocketCallOutcome(response: response, error: error)
                }
            } catch let error as PocketError {
                outcome = PocketCallOutcome(response: nil, error: error)
            } catch {
                // Only a redirect hook throws anything else.
                outcome = PocketCallOutcome(response: nil, error: PocketError(.unknown, "\(error)"))
            }
            self.end(outcome, delivery)
        }
        let cancel = state.withLock { s -> Bool in
            if case .running = s.phase { s.phase = .running(task) }
            return s.cancelRequested
        }
        if cancel { task.cancel() }
        return self
    }

    /// Cancels the request: the failure handlers get `.cancelled` (a call
    /// cancelled before `start()` fails that way once started). Nothing
    /// happens after the call ended.
    public func cancel() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.cancelRequested = true
            if case .running(let t) = s.phase { return t }
            return nil
        }
        task?.cancel()
    }

    /// Starts the call if needed and waits for its outcome: the 2xx
    /// response, or the error the failure handlers get. Returns as soon as
    /// the outcome is known (handlers may still be running). Cancelling
    /// the waiting task cancels the call.
    public func response() async throws -> PocketResponse {
        start()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<PocketCallOutcome, Never>) in
                let ended = state.withLock { s -> PocketCallOutcome? in
                    if case .done(let o) = s.phase { return o }
                    s.waiters.append(c)
                    return nil
                }
                if let ended { c.resume(returning: ended) }
            }
        } onCancel: {
            cancel()
        }
        if let error = outcome.error { throw error }
        return outcome.response!
    }

    private func end(_ outcome: PocketCallOutcome, _ delivery: CallbackDelivery<Event>) {
        let waiters = state.withLock { s -> [CheckedContinuation<PocketCallOutcome, Never>] in
            s.phase = .done(outcome)
            defer { s.waiters = [] }
            return s.waiters
        }
        delivery.send(.done(outcome))
        delivery.finish()
        for w in waiters { w.resume(returning: outcome) }
    }

    /// On the call's queue, one event at a time.
    private func handle(_ event: Event) {
        switch event {
        case .progress(let p):
            let handlers = state.withLock { p.direction == .upload ? $0.handlers.upload : $0.handlers.download }
            for h in handlers { h(p) }
        case .done(let outcome):
            // Handlers attached from now on run by themselves (`attach`).
            let handlers = state.withLock { s -> Handlers in
                defer { s.handlers = Handlers() }
                return s.handlers
            }
            for h in handlers.completion { h(outcome) }
            if let error = outcome.error {
                for h in handlers.failure { h(error, outcome.response) }
            } else if let response = outcome.response {
                for h in handlers.success { h(response) }
            }
        }
    }
}

/// How a `PocketCall` ended, as its completion handlers see it (MTPocket's
/// response object: success flag, response and error in one place).
public struct PocketCallOutcome: Sendable {
    /// The response, whenever the server answered, including a failure
    /// by status (then `error` is set too). Nil when no response came.
    public var response: PocketResponse?
    /// Why the call failed: a transport error, `.cancelled`, or a status
    /// outside 2xx. Nil on success.
    public var error: PocketError?

    /// True when a 2xx response arrived.
    public var isSuccess: Bool { error == nil && response != nil }
}

/// Where a `PocketCall`'s handlers run. Whichever is chosen, the handlers of one
/// call run one at a time and in order: progress reports as they came, then
/// the completion.
///
/// ```swift
/// client.call(request, on: .dispatch(DispatchQueue(label: "ui")))
/// client.call(request, on: .executor(client.executor))   // on the loop: never block there
/// ```
public struct PocketCallbackQueue: Sendable {
    enum Kind: Sendable {
        case dispatch(DispatchQueue)
        case executor((any TaskExecutor)?)
    }

    let kind: Kind

    /// Each event is `async`-dispatched to `queue`. Pass a serial queue: on a
    /// concurrent one, handlers of the same call could overlap or reorder.
    public static func dispatch(_ queue: DispatchQueue) -> PocketCallbackQueue { PocketCallbackQueue(kind: .dispatch(queue)) }

    /// Handlers run in one task that prefers `executor` (e.g. a client's
    /// `executor`, to stay on its loop thread).
    public static func executor(_ executor: any TaskExecutor) -> PocketCallbackQueue { PocketCallbackQueue(kind: .executor(executor)) }

    /// The default: handlers run in one task on Swift's global concurrent
    /// executor. A Linux service has no main queue to default to, and this
    /// never holds up the engine's loop.
    public static let task = PocketCallbackQueue(kind: .executor(nil))
}

/// Delivers one call's events, in order, where its `PocketCallbackQueue` says.
struct CallbackDelivery<Event: Sendable>: Sendable {
    private let post: @Sendable (Event) -> Void
    private let close: @Sendable () -> Void

    init(_ queue: PocketCallbackQueue, handle: @escaping @Sendable (Event) -> Void) {
        switch queue.kind {
        case .dispatch(let q):
            post = { event in q.async { handle(event) } }
            close = {}
        case .executor(let executor):
            let (events, continuation) = AsyncStream<Event>.makeStream()
            Task(executorPreference: executor) {
                for await event in events { handle(event) }
            }
            post = { continuation.yield($0) }
            close = { continuation.finish() }
        }
    }

    func send(_ event: Event) { post(event) }

    /// No more events: ends the delivering task once it has run the rest.
    func finish() { close() }
}
