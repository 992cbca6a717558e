#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The one request path. Every way of sending enters `execute` — `send`
// (and what is built on it: endpoints, pipes, schemas, callbacks, groups),
// queues, `stream` and downloads — and runs these stages in this order:
//
//   1. the middleware chain: each middleware adapts the request, in order;
//      the retry policy is the chain's last middleware
//   2. redirects (`followingRedirects`): each hop is
//   3. prepared (a pure value step: defaults merged, URL credentials,
//      Accept-Encoding, the body described; `PreparedRequest`) and handed to
//   4. the engine (`InFlightRequest`), or to a configured `PocketTransport`;
//      a request with an `authentication` answers a 401 challenge around
//      2-4 once (`authenticating`, Sources/Pocket/Auth)
//   5. validation of the final response (the request's `PocketValidation`,
//      else the client's); then the middleware observe the outcome in
//      reverse order and, for a failure, are asked in order whether to retry
//   6. events: `.running`, `.retrying`, `.finished` (carrying the error the
//      caller gets, validation's included) or `.cancelled`
//
// With no middleware, no retry policy and nobody listening, stages 1, 5's
// hooks and 6 cost a few nil checks: the same path, with nothing to do.
//
// Retries apply until the first byte of the body reaches the caller: a
// collected `send` body reaches it only when complete, a stream's when the
// head is returned, a download's when the first byte is written to the file.

extension PocketClient {
    /// Sends `request` and returns the complete response.
    ///
    /// Any status is a response, not an error, unless the request or the
    /// client has a `PocketValidation` (then a response that fails it is
    /// thrown: `.unacceptableStatus`, `.unacceptableContentType`). Throws
    /// `PocketError` for everything that kept a complete response from
    /// arriving. Cancelling the calling Task cancels the request and closes
    /// its connection (`.cancelled`).
    ///
    /// The request runs through the client's middleware and retry policy
    /// (`Configuration.handling`) plus those of `options`, follows
    /// redirects as `request.redirects` (or `Configuration.redirects`) says,
    /// and reports its states to `events()` and observers. `response.url` and
    /// `response.redirects` tell where the answer came from;
    /// `response.request` is the request as last sent (after middleware).
    ///
    /// With `progress`, upload and download progress is reported as the
    /// bytes move (rate-limited; see `PocketProgressHandler`).
    nonisolated(nonsending) public func send(_ request: PocketRequest, options: PocketSendOptions = PocketSendOptions(),
                     progress: PocketProgressHandler? = nil) async throws -> PocketResponse {
        try await send(request, options: options, progress: progress, sink: nil)
    }

    /// `send` with the task's own event sink (queues pass theirs).
    @inline(__always)
    nonisolated(nonsending) func send(_ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?,
              sink: EventSink?) async throws -> PocketResponse {
        guard takesShortcut(request, options: options, sink: sink) else {
            return try applySchema(await sendAdapted(request, options: options, progress: progress, sink: sink))
        }
        return try applySchema(await executeShortcut(request, progress: progress) { request, progress in
            try await self.sendHop(request, progress: progress)
        })
    }

    /// `send` through the chain: `executeAdapted` with `send`'s hop, made
    /// one function (one task frame, the hop inlined in it, not a closure
    /// with a frame of its own).
    @inline(never)
    nonisolated(nonsending) private func sendAdapted(_ request: PocketRequest, options: PocketSendOptions,
                                                     progress: PocketProgressHandler?, sink: EventSink?) async throws -> PocketResponse {
        try await executeAdapted(request, options: options, progress: progress, sink: sink) { request, progress in
            try await self.sendHop(request, progress: progress)
        }
    }

    /// `send`'s hop: the cache, or redirects and the engine.
    @inline(__always)
    nonisolated(nonsending) private func sendHop(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        if responseCache != nil || request.cachePolicy != nil {
            return try await caching(request, progress: progress)   // Sources/Pocket/Cache
        }
        return try await exchange(request, progress: progress)
    }

    /// Sends `request` and returns as soon as the response head arrives; the
    /// body is read from `response.body` as it comes.
    ///
    /// At most `bufferSize` bytes (256 KiB by default) wait for the reader;
    /// past that the engine stops reading the socket until the reader
    /// catches up (real backpressure: memory stays bounded however fast the
    /// server sends). `Configuration.limits.maxBodyBytes` does not apply —
    /// bound what you keep with `collect(upTo:)`. Errors before the head are
    /// thrown here; errors in the body end the body's iteration.
    ///
    /// The request takes the same path as `send`: middleware, retries (until
    /// the head is returned: a failure before it, or a head that fails
    /// validation or is a retryable status, can be retried), redirects (a
    /// 3xx body of up to 64 KiB is read and dropped so its connection is
    /// reused), validation of the head, events.
    public func stream(_ request: PocketRequest, bufferSize: Int = 256 << 10, options: PocketSendOptions = PocketSendOptions(),
                       progress: PocketProgressHandler? = nil) async throws -> PocketStreamingResponse {
        try await execute(request, options: options, progress: progress, sink: nil) { request, progress in
            if self.responseCache != nil || request.cachePolicy != nil {
                return try await self.cachingStream(request, bufferSize: bufferSize, progress: progress)   // Sources/Pocket/Cache
            }
            return try await self.streamExchange(request, bufferSize: bufferSize, progress: progress)
        }
    }

    /// Redirects, then the engine (or the configured transport) for each
    /// hop, returning at the head.
    func streamExchange(_ request: PocketRequest, bufferSize: Int, progress: PocketProgressHandler?) async throws -> PocketStreamingResponse {
        try await followingRedirects(request, progress: progress) { request, progress in
            if let transport = self.configuration.handling.transport {
                return PocketStreamingResponse(collected: try await transport.send(request, progress: progress))
            }
            return try await self.proxied(request) { request in
                let state = BodyStreamState(highWater: bufferSize)
                let inflight = InFlightRequest(engine: self.engine, delivery: .stream(state), progress: progress)
                state.request = inflight
                let body = PocketResponseBodyStream(state)
                let head = try await self.run(request, inflight)
                return PocketStreamingResponse(status: head.status, reason: head.reason, httpMinorVersion: head.httpMinorVersion,
                                               headers: head.headers, body: body)
            }
        }
    }

    /// Redirects, then the engine (or the configured transport) for each
    /// hop, the body collected in memory. The common case (no transport,
    /// proxy, cookie store or progress `finish`) is inlined into its
    /// callers: one engine request, the redirect machinery started only
    /// after a 3xx it follows; the rest is `exchangeGeneral`.
    @inline(__always)
    nonisolated(nonsending) func exchange(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        guard direct, progress?.finish == nil, request.proxy == nil else {
            return try await exchangeGeneral(request, progress: progress)
        }
        var inflight = spares.collectingRequest(engine: engine, progress: progress)
        var response = try await run(request, inflight)
        spares.recycle(&inflight)
        if follows(request, response.status) { return try await redirected(request, after: response, progress: progress) }
        response.record(url: request.url, redirects: [])
        return response
    }

    /// Whether `request` follows a response of `status` (a 3xx, redirects on).
    func follows(_ request: PocketRequest, _ status: Int) -> Bool {
        RedirectFollower.isRedirect(status) && request.redirects?.follows ?? configuration.redirects.follows
    }

    /// The redirect machinery, started after the first hop's 3xx.
    private nonisolated(nonsending) func redirected(_ request: PocketRequest, after response: PocketResponse,
                                                   progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await redirecting(request, after: response, progress: progress, gate: nil) { request, progress in
            try await self.proxied(request) { request in
                try await self.run(request, InFlightRequest(engine: self.engine, progress: progress))
            }
        }
    }

    /// `exchange` through a transport, a proxy (whose 407 is answered,
    /// Sources/Pocket/Auth), a cookie store (each hop goes through it) or
    /// with a progress `finish`.
    nonisolated(nonsending) func exchangeGeneral(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        if let transport = configuration.handling.transport {
            return try await followingRedirects(request, progress: progress) { request, progress in
                try await transport.send(request, progress: progress)
            }
        }
        if progress?.finish == nil, configuration.cookies == nil {
            var response = try await answeringProxy(request) { request in
                try await self.run(request, InFlightRequest(engine: self.engine, progress: progress))
            }
            if follows(request, response.status) { return try await redirected(request, after: response, progress: progress) }
            response.record(url: request.url, redirects: [])
            return response
        }
        return try await followingRedirects(request, progress: progress) { request, progress in
            try await self.proxied(request) { request in
                try await self.run(request, InFlightRequest(engine: self.engine, progress: progress))
            }
        }
    }

    /// Submits `inflight` and waits for its continuation: the complete
    /// response, or only its head for a streamed body.
    @inline(__always)
    nonisolated(nonsending) func run(_ request: PocketRequest, _ inflight: InFlightRequest) async throws -> PocketResponse {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                inflight.start(request, client: self, continuation: continuation)
            }
        } onCancel: {
            inflight.cancel()
        }
        return inflight.takeResponse()
    }

    // MARK: the path

    /// Runs `request` through the chain, `hop` (redirects and the engine)
    /// and validation, reporting to `sink` (or to a sink made here when
    /// anyone listens).
    /// With nothing to adapt, retry or report, the one attempt is inlined
    /// into the caller (`hop` with it); else `executeAdapted` runs the chain.
    @inline(__always)
    nonisolated(nonsending) func execute<R: ExchangedResponse>(
        _ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?, sink given: EventSink?,
        _ hop: nonisolated(nonsending) (PocketRequest, PocketProgressHandler?) async throws -> R
    ) async throws -> R {
        guard takesShortcut(request, options: options, sink: given) else {
            return try await executeAdapted(request, options: options, progress: progress, sink: given, hop)
        }
        return try await executeShortcut(request, progress: progress, hop)
    }

    /// Whether `request` has nothing to adapt, retry or report: no
    /// middleware or retry policy (the client's or `options`'), no
    /// observer or subscriber, no task sink, no authentication.
    @inline(__always)
    func takesShortcut(_ request: PocketRequest, options: PocketSendOptions, sink: EventSink?) -> Bool {
        unadapted && sink == nil && options.retry == nil && options.middleware.isEmpty && options.observers.isEmpty
            && !hub.isListening && request.authentication == nil
    }

    /// The one attempt of a request that `takesShortcut`: `hop`, then validation.
    @inline(__always)
    nonisolated(nonsending) func executeShortcut<R: ExchangedResponse>(
        _ request: PocketRequest, progress: PocketProgressHandler?,
        _ hop: nonisolated(nonsending) (PocketRequest, PocketProgressHandler?) async throws -> R
    ) async throws -> R {
        try await finishShortcut(hop(request, progress), for: request)
    }

    /// The shortcut's last step (`executeShortcut`, and `sendSinking`'s own
    /// shortcut): validation, then the request kept on the response, which
    /// it takes and hands back.
    @inline(__always)
    nonisolated(nonsending) func finishShortcut<R: ExchangedResponse>(_ response: consuming R,
                                                                     for request: PocketRequest) async throws -> R {
        if let failure = validationFailure(of: response, for: request) {
            await response.discardBody()
            throw failure
        }
        response.keep(request: request)
        return response
    }

    /// `execute` through the middleware chain, the retry policy and the events.
    // The async functions of this path hold only what lives across a
    // suspension: every synchronous step (the context, the checks, the
    // errors and their messages, the events) is a function of its own, so
    // its temporaries live on the thread's stack, not in the task's frame
    // (a frame holds a slot for every value an inlined step makes: this
    // one measured 14.9 KB, touched across 64 tasks' frames per round).
    @inline(__always)
    nonisolated(nonsending) func executeAdapted<R: ExchangedResponse>(
        _ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?, sink given: EventSink?,
        _ hop: nonisolated(nonsending) (PocketRequest, PocketProgressHandler?) async throws -> R
    ) async throws -> R {
        let (chain, context, sink, started) = attemptSetup(request, options: options, sink: given)
        do {
            return try await attempts(request, chain: chain, context: context, started: started, progress: progress, sink: sink, hop)
        } catch {
            throw Self.cancellationReported(error, context: context, sink: sink)
        }
    }

    /// The chain, context and event sink of one request.
    @inline(never)
    private func attemptSetup(_ request: PocketRequest, options: PocketSendOptions,
                              sink given: EventSink?) -> (MiddlewareChain, PocketMiddlewareContext, EventSink?, ContinuousClock.Instant) {
        // The request's own middleware run after the client's; its
        // policy replaces the client's as the last middleware. (The
        // client's handling is read field by field: a copy of the whole
        // struct would retain and release each of its fields per request.)
        let chain = options.middleware.isEmpty && options.retry == nil ? self.chain
            : MiddlewareChain(configuration.handling.middleware + options.middleware,
                              policy: options.retry ?? configuration.handling.retry)
        // On the system clock the context keeps no copy of it (an
        // existential copied per request): its origin is the client's.
        let now = ContinuousClock.now
        let clock: (any PocketRetryClock)?, started: Duration
        if let origin = systemClockOrigin {
            (clock, started) = (nil, now - origin)
        } else {
            let own = configuration.handling.clock
            (clock, started) = (own, own.uptime())
        }
        // The fields are made in the context (a binding of them was copied
        // into it: a retain and a release of each reference per request).
        let context = if let given {
            PocketMiddlewareContext(fields: given.identity.fields, clock: clock, started: started)
        } else {
            PocketMiddlewareContext(fields: TaskFields(taskID: hub.newTaskID(), method: request.method, url: request.url,
                                                       endpoint: options.endpoint.map(EndpointKey.named) ?? .path,
                                                       metadata: request.metadata),
                                    clock: clock, started: started)
        }
        // The context is also the task's identity in its events (one
        // object per request for both); a queue's task brings its own sink.
        let sink = given ?? (hub.listens(options: options) ? EventSink(hub: hub, identity: context, observers: options.observers) : nil)
        return (chain, context, sink, now)
    }

    /// A cancelled request's error, reported as `.cancelled`; any other
    /// error as it is (already reported).
    @inline(never)
    private static func cancellationReported(_ error: any Error, context: PocketMiddlewareContext, sink: EventSink?) -> any Error {
        let cancelled: PocketError
        if let error = error as? PocketError, error.code == .cancelled {
            cancelled = error
        } else if error is CancellationError {
            cancelled = PocketError(.cancelled, "the request was cancelled")
        } else {
            return error
        }
        sink?.emit(.cancelled, attempt: context.attempt, error: cancelled)
        return cancelled
    }

    /// The attempts of one request through `chain`: adapt, send, validate,
    /// observe; a failure is offered to each middleware's `retry` in order
    /// (the first opinion wins; the retry policy is the last middleware).
    /// The policy's `maxAttempts` (3 without a policy) caps every retry,
    /// whoever asks for it.
    @inline(__always)
    nonisolated(nonsending) private func attempts<R: ExchangedResponse>(
        _ request: PocketRequest, chain: MiddlewareChain, context: PocketMiddlewareContext,
        started firstStart: ContinuousClock.Instant, progress: PocketProgressHandler?, sink: EventSink?,
        _ hop: nonisolated(nonsending) (PocketRequest, PocketProgressHandler?) async throws -> R
    ) async throws -> R {
        // Only the hooks that do something are called (`MiddlewareChain`):
        // not the retry policy's `adapt` and `observe`, nor a closure
        // middleware's missing ones.
        let observed = !chain.observers.isEmpty
        while true {
            let attempt = try Self.beginAttempt(context: context, sink: sink)
            let attemptStart = attempt == 1 ? firstStart : ContinuousClock.now
            var sent = request
            do {
                for adapter in chain.adapters {
                    switch adapter {
                    case .closure(let adapt): sent = try await adapt(sent, context)
                    case .middleware(let i): sent = try await chain.all[i].adapt(sent, context: context)
                    }
                }
                if let deadline = chain.policy?.deadline { try limit(&sent, to: deadline, context: context, attempt: attempt) }
            } catch {
                if let response = try await settle(Result<R, any Error>.failure(error), failure: nil, request: request, sent: sent,
                                                   attempt: attempt, started: attemptStart, observing: observed && chain.observes(context),
                                                   chain: chain, context: context, sink: sink) {
                    return response
                }
                continue
            }
            var outcome: Result<R, any Error>
            var failure: PocketError?
            var observing = false
            do {
                var response = sent.authentication == nil && !answersChallenges
                    ? try await hop(sent, progress)
                    : try await authenticating(&sent, progress: progress, hop)   // Sources/Pocket/Auth
                failure = validationFailure(of: response, for: sent)
                // A success no hook observes is the caller's at once (not
                // moved through an outcome and `finish`, a copy each).
                observing = observed && chain.observes(context)
                if failure == nil, !observing, delivered(&response, sent: sent, attempt: attempt, sink: sink) { return response }
                outcome = .success(response)
            } catch {
                outcome = .failure(error)
                observing = observed && chain.observes(context)
            }
            if let response = try await settle(outcome, failure: failure, request: request, sent: sent, attempt: attempt,
                                               started: attemptStart, observing: observing, chain: chain, context: context, sink: sink) {
                return response
            }
        }
    }

    /// One attempt's outcome through the hooks: observed, then (a failure)
    /// offered to `retry`. Returns the caller's response; throws the
    /// caller's error; returns nil to make the next attempt (after the
    /// backoff, already waited).
    @inline(never)
    nonisolated(nonsending) private func settle<R: ExchangedResponse>(
        _ outcome: Result<R, any Error>, failure: PocketError?, request: PocketRequest, sent: PocketRequest,
        attempt: Int, started: ContinuousClock.Instant, observing: Bool, chain: MiddlewareChain,
        context: PocketMiddlewareContext, sink: EventSink?
    ) async throws -> R? {
        let retryable = isRetryable(outcome, failure: failure, sent: sent)
        // The attempt's duration, for the hooks (none will run: the clock is not read).
        if observing || retryable || failure != nil {
            context.end(elapsed: ContinuousClock.now - started, validationFailure: failure)
        }
        // What the hooks see, made once, only when a hook will see it.
        let view = observing || retryable ? Self.view(of: outcome) : nil
        if observing, let view {
            for (k, i) in chain.observers.enumerated().reversed() where chain.observerGates[k]?.observes(context) ?? true {
                await chain.all[i].observe(view, for: sent, context: context)
            }
        }
        if case .failure(let error) = outcome, Self.isCancellation(error) { throw error }

        var decision: PocketRetryDecision?
        if retryable, let view {
            do {
                for middleware in chain.retriers {
                    decision = try await middleware.retry(view, for: sent, context: context)
                    if decision != nil { break }
                }
            } catch {
                if case .success(let response) = outcome { await response.discardBody() }
                throw Self.finished(error, attempt: attempt, sink: sink)
            }
        }
        guard let decision, decision != .stop else {
            return try finish(outcome, validationFailure: failure, request: sent, attempt: attempt, sink: sink)
        }
        let next = retry(request, after: outcome, failure: failure, decision: decision, attempt: attempt, chain: chain)
        if case .success(let response) = outcome { await response.discardBody() }
        let delay: Duration
        switch next {
        case .failure(let error): throw Self.finished(error, attempt: attempt, sink: sink)
        case .success(let d): delay = d
        }
        Self.retrying(after: outcome, failure: failure, attempt: attempt, delay: delay, sink: sink)
        if delay > .zero {
            do {
                try await context.clock.sleep(for: delay)
            } catch {
                throw PocketError(.cancelled, "the request was cancelled while waiting to retry", underlying: error)
            }
        }
        return nil
    }

    /// The next attempt's number, started: checked for cancellation, the
    /// context's attempt set, `.running` reported.
    @inline(never)
    private static func beginAttempt(context: PocketMiddlewareContext, sink: EventSink?) throws -> Int {
        let attempt = context.attempt + 1
        if Task.isCancelled { throw PocketError(.cancelled, "the request was cancelled") }
        context.begin(attempt: attempt)
        sink?.emit(.running, attempt: attempt)
        return attempt
    }

    /// `sent`'s total timeout cut to what is left of the retry deadline.
    @inline(never)
    private func limit(_ sent: inout PocketRequest, to deadline: Duration, context: PocketMiddlewareContext, attempt: Int) throws {
        let remaining = deadline - context.elapsed
        guard remaining > .zero else {
            throw PocketError(.deadlineExceeded, "the retry deadline of \(deadline) passed before attempt \(attempt)")
        }
        var timeouts = sent.timeouts ?? configuration.timeouts
        timeouts.total = min(timeouts.total ?? remaining, remaining)
        sent.timeouts = timeouts
    }

    /// Whether a response that passed validation is the caller's at once
    /// (a success: it passes a validation, or is 2xx/3xx with none); then
    /// `.finished` is reported and the request kept in it.
    @inline(never)
    private func delivered<R: ExchangedResponse>(_ response: inout R, sent: PocketRequest, attempt: Int, sink: EventSink?) -> Bool {
        guard configuration.validation != nil || sent.validation != nil || (200..<400).contains(response.redirectStatus) else {
            return false
        }
        sink?.emit(.finished, attempt: attempt, status: response.attemptView.status)
        response.keep(request: sent)
        return true
    }

    /// Whether an outcome may be retried: a success never is; nor is a
    /// failure whose body already reached the caller.
    @inline(never)
    private func isRetryable<R: ExchangedResponse>(_ outcome: Result<R, any Error>, failure: PocketError?, sent: PocketRequest) -> Bool {
        switch outcome {
        case .success(let response):
            return failure != nil
                || (configuration.validation == nil && sent.validation == nil && !(200..<400).contains(response.redirectStatus))
        case .failure(let error):
            return !((error as? PocketError)?.bodyDelivered ?? false)
        }
    }

    /// What the hooks see of an outcome.
    @inline(never)
    private static func view<R: ExchangedResponse>(of outcome: Result<R, any Error>) -> Result<PocketResponse, any Error> {
        switch outcome {
        case .success(let response): return .success(response.attemptView)
        case .failure(let error): return .failure(error)
        }
    }

    /// The wait before the attempt after `attempt`, or the error that ends
    /// the request instead: the attempt cap reached, or a one-shot body.
    @inline(never)
    private func retry<R: ExchangedResponse>(_ request: PocketRequest, after outcome: Result<R, any Error>, failure: PocketError?,
                                             decision: PocketRetryDecision, attempt: Int,
                                             chain: MiddlewareChain) -> Result<Duration, PocketError> {
        let maxAttempts = chain.policy?.maxAttempts ?? PocketRetryPolicy.defaultMaxAttempts
        guard attempt < maxAttempts else {
            return .failure(PocketError(.tooManyAttempts, "\(request.method) \(request.url.absoluteString): \(attempt) attempts made, the most the retry policy's maxAttempts allows (\(maxAttempts))",
                                        underlying: failure ?? outcome.failure, response: Self.head(of: outcome)))
        }
        if let body = request.body, !body.isReplayable {
            return .failure(PocketError(.bodyNotReplayable, "\(request.method) \(request.url.absoluteString) would be retried after attempt \(attempt) (\(Self.describe(outcome))), but its body is one-shot (a stream) and was already sent",
                                        underlying: failure ?? outcome.failure, response: Self.head(of: outcome)))
        }
        switch decision {
        case .retryAfter(let d): return .success(max(.zero, d))
        default: // `.retry` from a middleware: the policy's backoff, or at once
            var generator = SystemRandomNumberGenerator()
            return .success(chain.policy?.backoff.delay(forRetry: attempt, using: &generator) ?? .zero)
        }
    }

    /// `.retrying` reported, with the wait.
    @inline(never)
    private static func retrying<R: ExchangedResponse>(after outcome: Result<R, any Error>, failure: PocketError?, attempt: Int,
                                                       delay: Duration, sink: EventSink?) {
        sink?.emit(.retrying, attempt: attempt, status: head(of: outcome)?.status, error: failure ?? outcome.failure, retryDelay: delay)
    }

    /// `error`, reported as the request's `.finished`.
    @inline(never)
    private static func finished(_ error: any Error, attempt: Int, sink: EventSink?) -> any Error {
        sink?.emit(.finished, attempt: attempt, error: error)
        return error
    }

    /// The outcome the caller gets, reported as `.finished`.
    @inline(never)
    private func finish<R: ExchangedResponse>(_ outcome: Result<R, any Error>, validationFailure: PocketError?,
                                              request: PocketRequest, attempt: Int, sink: EventSink?) throws -> R {
        switch outcome {
        case .success(var response):
            if var failure = validationFailure {
                if attempt > 1 { failure.message += " (after \(attempt) attempts)" }
                sink?.emit(.finished, attempt: attempt, status: response.attemptView.status, error: failure)
                throw failure
            }
            sink?.emit(.finished, attempt: attempt, status: response.attemptView.status)
            response.keep(request: request)
            return response
        case .failure(var error):
            if attempt > 1, var pocket = error as? PocketError {
                pocket.message += " (after \(attempt) attempts)"
                error = pocket
            }
            sink?.emit(.finished, attempt: attempt, error: error)
            throw error
        }
    }

    /// Why `response` fails the request's validation (else the client's), or
    /// nil when it passes or there is none.
    func validationFailure<R: ExchangedResponse>(of response: R, for request: PocketRequest) -> PocketError? {
        guard let validation = request.validation ?? configuration.validation else { return nil }
        return response.validationFailure(validation, format: request.format ?? .json)
    }

    /// The last step of `send`: the request's `schema` (or its error
    /// parser) applied to the response (`response.schemaResult`). With
    /// neither set (the default) that is two nil checks.
    func applySchema(_ response: consuming PocketResponse) throws -> PocketResponse {
        guard response.request?.needsSchemaStep == true, let request = response.request else { return response }
        var response = response
        let validation = request.validation ?? configuration.validation
        if let schema = request.schema, !configuration.schemas.isAbsent(schema) {
            response.schemaResult = try response.validated(schema: schema, registry: configuration.schemas,
                                                           errorParser: request.errorParser,
                                                           acceptedStatus: validation?.statusCodes)
        } else if let parser = request.errorParser {
            try PocketSchemaRegistry.check(response, with: parser, registry: configuration.schemas)
        }
        return response
    }

    static func isCancellation(_ error: any Error) -> Bool {
        (error as? PocketError)?.code == .cancelled || error is CancellationError
    }

    static func isCancellation<R>(_ outcome: Result<R, any Error>) -> Bool {
        guard case .failure(let error) = outcome else { return false }
        return isCancellation(error)
    }

    private static func head<R: ExchangedResponse>(of outcome: Result<R, any Error>) -> PocketResponseHead? {
        switch outcome {
        case .success(let r): return r.attemptView.head
        case .failure(let e): return (e as? PocketError)?.response
        }
    }

    private static func describe<R: ExchangedResponse>(_ outcome: Result<R, any Error>) -> String {
        switch outcome {
        case .success(let r): return "HTTP \(r.attemptView.status)"
        case .failure(let e): return "\(e)"
        }
    }

    // MARK: events

    /// The client's task events (every state change of every request sent
    /// through it, queues, streams and downloads included) as an
    /// `AsyncSequence`. Each call makes a new subscription that keeps the
    /// newest `bufferingNewest` events (1024 by default, so a slow reader
    /// costs bounded memory) and ends when the stream is dropped or the
    /// client shuts down. A request reports to the subscriptions that exist
    /// when it starts.
    public func events(bufferingNewest: Int = 1024) -> PocketTaskEvents {
        hub.subscribe(bufferingNewest: bufferingNewest)
    }

    /// Calls `handler` for events of every task whose endpoint key is
    /// `endpoint` (STNetTaskQueue's `addTaskDelegate:uri:`): the URL path
    /// for plain requests, the path template for `PocketEndpoint`s. Several
    /// observers per endpoint are kept, in order. Returns a token for `removeObserver`.
    @discardableResult
    public func addObserver(endpoint: String, states: Set<PocketTaskState> = Set(PocketTaskState.allCases),
                            _ handler: @escaping @Sendable (PocketTaskEvent) -> Void) -> PocketObserverToken {
        hub.addObserver(endpoint: endpoint, PocketTaskObserver(states: states, handler))
    }

    /// Stops an observer added with `addObserver`. Unknown tokens are ignored.
    public func removeObserver(_ token: PocketObserverToken) {
        hub.removeObserver(token)
    }
}

/// What one attempt of the path returns: a collected response, a streamed
/// one (at its head) or a download's. The chain's hooks see every kind as a
/// `PocketResponse` (`attemptView`; a streamed body is not in it).
protocol ExchangedResponse: RedirectableResponse {
    /// The response as middleware hooks see it.
    var attemptView: PocketResponse { get }
    /// Why it fails `validation`, or nil.
    func validationFailure(_ validation: PocketValidation, format: PocketContentFormat) -> PocketError?
    /// Records the request that was sent (a collected response keeps it).
    mutating func keep(request: PocketRequest)
    /// Frees what an unused response still holds (a retried or refused one).
    func discardBody() async
}

extension PocketResponse: ExchangedResponse {
    var attemptView: PocketResponse { self }

    func validationFailure(_ validation: PocketValidation, format: PocketContentFormat) -> PocketError? {
        validationFailure(validation, format: format, hasBody: !body.isEmpty)
    }


    mutating func keep(request: PocketRequest) { self.request = request }

    func discardBody() async {}
}

extension PocketStreamingResponse: ExchangedResponse {
    var attemptView: PocketResponse {
        PocketResponse(status: status, reason: reason, httpMinorVersion: httpMinorVersion, headers: headers)
    }

    /// The status, and the media type unless the head says the body is empty.
    func validationFailure(_ validation: PocketValidation, format: PocketContentFormat) -> PocketError? {
        let empty = headers["Content-Length"] == "0" || status == 204 || status == 304
        return attemptView.validationFailure(validation, format: format, hasBody: !empty)
    }

    mutating func keep(request: PocketRequest) { metadata = request.metadata }

    func discardBody() async { body.state.abandon() }
}

extension Result {
    /// The error, or nil for a success.
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
