#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The one request path. Every way of sending enters `execute` with a
// delivery (ResponseDelivery.swift: collect, stream, sink or file) —
// `send` and what is built on it (endpoints, pipes, schemas, callbacks,
// groups, the OpenAPI transport), `send(writingBodyInto:)` and PocketNIO,
// queues, `stream` and downloads — and runs these stages in this order:
//
//   1. the middleware chain: each middleware adapts the request, in order;
//      the retry policy is the chain's last middleware (`attempts`)
//   2. authentication: a request with an `authentication` answers a 401
//      challenge around 3-5 (`authenticating`, Sources/Pocket/Auth)
//   2b. hedging, for an idempotent request under a hedging policy: the
//      request and its hedges race through 4-5 (PocketClient+Hedge.swift)
//   3. the cache step, when the client has a cache or the request a cache
//      policy (`fetching`, Sources/Pocket/Cache)
//   4. redirects (`followingRedirects`, RedirectFollower.swift): each hop
//      goes through the cookie store, then
//   5. `hop`: for a replica set's name (or an origin with a breaker), a
//      replica chosen and the request moved to it (Sources/Pocket/Replicas);
//      then the configured `PocketTransport`, or the engine (the hop's
//      proxy challenge answered): the request is prepared (a pure value
//      step: `PreparedRequest`) and submitted (`InFlightRequest`), its body
//      delivered as the delivery says
//   6. validation of the final response (the request's `PocketValidation`,
//      else the client's); then the middleware observe the outcome in
//      reverse order and, for a failure, are asked in order whether to retry
//   7. events: `.running`, `.retrying`, `.finished` (carrying the error the
//      caller gets, validation's included) or `.cancelled`
//
// A task deadline (`PocketDeadline`, `PocketMiddlewareContext.deadline`)
// cuts each attempt's total timeout to what is left and ends the request
// with `.deadlineExceeded`; a retry draws on the client's retry budget
// (`ExtraRequestBudget`), a hedge on its hedging budget.
//
// With no middleware (or none with work for the request: a tracing
// middleware without a tracer), no retry policy, no authentication and
// nobody listening, `execute` skips 1, 2, 6's hooks and 7: one attempt
// (hedged under the client's hedging policy; its total timeout cut to a
// task deadline), then validation (and one count for the budgets). With
// the retry policy as the only middleware, the first attempt is made the
// same way; an outcome the policy may retry then goes on through 6 as
// attempt 1. Every other stage checks for its own work (a cache, a
// redirect, a cookie store, a proxy) with a nil or status check.
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

    /// `send` with the task's own event sink (queues pass theirs). Inlined
    /// into `send`: an async call of its own would add a task-allocated
    /// frame, and a suspension's resume, to every request.
    @inline(__always)
    nonisolated(nonsending) func send(_ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?,
                                      sink: EventSink?) async throws -> PocketResponse {
        try applySchema(await execute(request, options: options, progress: progress, sink: sink, CollectDelivery()))
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
    /// reused), validation of the head, events. Like `send`, it runs on the
    /// caller's executor.
    nonisolated(nonsending) public func stream(_ request: PocketRequest, bufferSize: Int = 256 << 10,
                                               options: PocketSendOptions = PocketSendOptions(),
                                               progress: PocketProgressHandler? = nil) async throws -> PocketStreamingResponse {
        try await execute(request, options: options, progress: progress, sink: nil, StreamDelivery(bufferSize: bufferSize))
    }

    // MARK: the path

    /// Runs `request` through the stages (see the top of this file) and
    /// returns its response in `delivery`'s form, reporting to `sink` (or to
    /// a sink made here when anyone listens).
    ///
    /// `execute` and the stages under it down to the engine (`fetching`,
    /// `followingRedirects`, the cookie hop, `hop`, `engineHop`, `run`) are
    /// inlined into their callers: an async call of its own would add a
    /// task-allocated frame, and a suspension's resume, to every request.
    /// The stages that run only for some requests (`executeAdapted`, the
    /// redirects after a 3xx, the cache, authentication) stay calls.
    @inline(__always)
    nonisolated(nonsending) func execute<D: ResponseDelivery>(
        _ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?, sink given: EventSink?,
        _ delivery: consuming D
    ) async throws -> D.Response {
        extraRequests.deposit()   // the budgets' count of requests
        // Nothing to adapt, retry, authenticate or report (middleware that
        // can tell have no work for this request): one attempt (hedged under
        // the client's hedging policy), then validation.
        if given == nil, unadapted || retriesOnly || (gatedOnly && !chain.engages(request)), options.hasNoPolicies,
           options.middleware.isEmpty, options.observers.isEmpty, !hub.isListening, request.authentication == nil {
            if retriesOnly || (deadlineHeader != nil && PocketDeadline.inUse) {
                return try await executeFirstAttempt(request, options: options, progress: progress, delivery)
            }
            // A task deadline cuts each hop's total timeout (the delivery
            // carries it to the engine); its passing is `.deadlineExceeded`.
            let deadline = PocketDeadline.inUse ? try cut(&delivery, request.timeouts, to: PocketDeadline.currentNanos) : .max
            var response = try await fetching(request, hedging: hedging, deadline: deadline, attempt: 1, sink: nil,
                                              progress: progress, delivery)
            if let failure = accept(&response, sent: request) {
                await response.discardBody()
                throw failure
            }
            return response
        }
        return try await executeAdapted(request, options: options, progress: progress, sink: given, delivery)
    }

    /// `execute`'s one attempt when the retry policy is the only middleware
    /// (`retriesOnly`), or a task deadline may be set and the client sends
    /// the time left in a header (the request is then changed): no
    /// middleware context is made for it. An outcome the policy may retry
    /// (a failure, or a status a validation or the policy's table may turn
    /// away) goes on to the attempts loop as attempt 1 (`retried`). Out of
    /// line: the deadline, the start and the flags held across the exchange
    /// would grow every request's frame.
    @inline(never)
    nonisolated(nonsending) func executeFirstAttempt<D: ResponseDelivery>(
        _ request: consuming PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?,
        _ delivery: consuming D
    ) async throws -> D.Response {
        // In nanoseconds after `PocketDeadline.origin`: a `ContinuousClock.Instant`
        // (a resilient type) held here would be allocated on every request.
        let started = retriesOnly ? PocketDeadline.nowNanos() : nil
        // A replica set's request keeps the replicas it used, so a retry prefers another.
        if retriesOnly, let replicas, replicas.namesSet(request.target) { delivery.history = ReplicaHistory() }
        let deadline = PocketDeadline.inUse ? PocketDeadline.currentNanos : .max   // a task-local: read once
        // The request itself is cut (a deadline header set): the loop's
        // attempts set their own.
        try limit(&request, &delivery, to: deadline, attempt: 1)
        var response: D.Response
        do {
            response = try await fetching(request, hedging: hedging, deadline: deadline, attempt: 1, sink: nil,
                                          progress: progress, delivery)
        } catch {
            guard let started else { throw error }
            return try await retried(request, after: .failure(error), failure: nil, started: started,
                                     options: options, progress: progress, delivery)
        }
        let failure = accept(&response, sent: request)
        if let started, retries(response, failure: failure, sent: request) {
            return try await retried(request, after: .success(response), failure: failure, started: started,
                                     options: options, progress: progress, delivery)
        }
        if let failure {
            await response.discardBody()
            throw failure
        }
        return response
    }

    /// A first attempt's outcome that the retry policy may retry, settled
    /// as attempt 1 of the attempts loop, which goes on from attempt 2.
    @inline(never)
    nonisolated(nonsending) private func retried<D: ResponseDelivery>(
        _ request: PocketRequest, after outcome: Result<D.Response, any Error>, failure: PocketError?,
        started startedNanos: Int64, options: PocketSendOptions, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        let (chain, context, _, started) = attemptSetup(request, options: options, sink: nil, startedNanos: startedNanos)
        if PocketDeadline.inUse { PocketDeadline.adopt(into: context) }
        context.begin(attempt: 1)
        do {
            if let response = try await settle(outcome, failure: failure, request: request, sent: request, attempt: 1,
                                               started: started, observing: false, chain: chain, context: context, sink: nil) {
                return response
            }
            return try await attempts(request, chain: chain, context: context, started: started, hedging: hedging,
                                      progress: progress, sink: nil, delivery)
        } catch {
            throw Self.cancellationReported(error, context: context, sink: nil)
        }
    }

    /// One attempt's exchange: the cache step (with a cache or a cache
    /// policy), else redirects and their hops.
    @inline(__always)
    nonisolated(nonsending) func fetching<D: ResponseDelivery>(_ request: PocketRequest, progress: PocketProgressHandler?,
                                                               _ delivery: D) async throws -> D.Response {
        if responseCache != nil || request.cachePolicy != nil {
            return try await delivery.cached(request, client: self, progress: progress)   // Sources/Pocket/Cache
        }
        return try await followingRedirects(request, progress: progress, delivery)
    }

    /// One hop: through a replica set when the URL's host names one (or
    /// the origin has a breaker: Sources/Pocket/Replicas), which moves it to
    /// a replica; then `directHop`.
    @inline(__always)
    nonisolated(nonsending) func hop<D: ResponseDelivery>(_ request: PocketRequest, progress: PocketProgressHandler?,
                                                          _ delivery: D) async throws -> D.Response {
        if let replicas, let set = replicas.set(for: request) {
            return try await routedHop(request, through: set, progress: progress, delivery)
        }
        return try await directHop(request, to: nil, progress: progress, delivery)
    }

    /// A hop to the request's own origin, or to `replica` (a replica set's
    /// hop, sent by the engine without a proxy): the configured transport,
    /// or the engine (through the hop's proxy, whose challenge is answered:
    /// Sources/Pocket/Proxy).
    @inline(__always)
    nonisolated(nonsending) func directHop<D: ResponseDelivery>(_ request: PocketRequest, to replica: PocketReplicaEndpoint?,
                                                                progress: PocketProgressHandler?, _ delivery: D) async throws -> D.Response {
        if hasTransport, let transport = configuration.handling.transport {   // the flag: no existential copied per hop
            return try await transportHop(request, through: transport, progress: progress, delivery)
        }
        if proxies == nil, request.proxy == nil {
            return try await engineHop(request, to: replica, progress: progress, delivery)
        }
        return try await answeringProxy(request) { request in
            try await self.engineHop(request, to: replica, progress: progress, delivery)
        }
    }

    /// A hop through the configured transport: a total timeout of its own
    /// while the task's deadline bounds the hop (`delivery.deadlineNanos`)
    /// is reported as the deadline, as an engine hop's is.
    @inline(never)
    nonisolated(nonsending) private func transportHop<D: ResponseDelivery>(
        _ request: PocketRequest, through transport: any PocketTransport, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        do {
            return try delivery.deliver(await transport.send(request, progress: progress))
        } catch {
            throw delivery.deadlineNanos == .max ? error : Self.deadlineReached(error)
        }
    }

    /// The one place a request enters the engine: an engine request made
    /// for `delivery`, submitted (to `replica` when there is one), and its
    /// response handed to `delivery`.
    @inline(__always)
    nonisolated(nonsending) func engineHop<D: ResponseDelivery>(_ request: PocketRequest, to replica: PocketReplicaEndpoint?,
                                                                progress: PocketProgressHandler?, _ delivery: D) async throws -> D.Response {
        var inflight = delivery.engineRequest(client: self, progress: progress)
        let response: PocketResponse
        do {
            response = try await run(request, inflight, to: replica, deadline: delivery.deadlineNanos)
        } catch {
            // A total timeout the task's deadline cut is the deadline passing.
            throw delivery.failed(delivery.deadlineNanos == .max ? error : Self.deadlineReached(error), inflight)
        }
        if response.timings.retried { extraRequests.chargeResend() }
        return delivery.response(response, from: &inflight, client: self)
    }

    /// Submits `inflight` (to `replica` when there is one; its total
    /// timeout cut to what is left of `deadline`,
    /// `ResponseDelivery.deadlineNanos`) and waits for its continuation: the
    /// complete response, or only its head for a body delivered as it arrives.
    @inline(__always)
    nonisolated(nonsending) func run(_ request: PocketRequest, _ inflight: InFlightRequest, to replica: PocketReplicaEndpoint?,
                                     deadline: Int64) async throws -> PocketResponse {
        try await withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                inflight.start(request, client: self, to: replica, deadline: deadline, continuation: continuation)
            }
        } onCancel: {
            inflight.cancel()
        }
        return inflight.takeResponse()
    }

    /// `execute` through the middleware chain, the retry policy and the events.
    nonisolated(nonsending) private func executeAdapted<D: ResponseDelivery>(
        _ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?, sink given: EventSink?,
        _ delivery: D
    ) async throws -> D.Response {
        let (chain, context, sink, started) = attemptSetup(request, options: options, sink: given)
        if PocketDeadline.inUse { PocketDeadline.adopt(into: context) }
        // A request to a replica set's name keeps the replicas its attempts
        // and hedges used, so each prefers another.
        var delivery = delivery
        if let replicas, replicas.namesSet(request.target) { delivery.history = ReplicaHistory() }
        do {
            return try await attempts(request, chain: chain, context: context, started: started, hedging: options.hedgingBox ?? hedging,
                                      progress: progress, sink: sink, delivery)
        } catch {
            throw Self.cancellationReported(error, context: context, sink: sink)
        }
    }

    /// The chain, context and event sink of one request.
    /// The first attempt's start (`startedNanos`, if it already has) is
    /// kept in nanoseconds after `PocketDeadline.origin`: each
    /// `ContinuousClock.Instant` (a resilient type outside the standard
    /// library) an async caller holds is allocated on its task.
    private func attemptSetup(_ request: PocketRequest, options: PocketSendOptions, sink given: EventSink?,
                              startedNanos: Int64? = nil)
        -> (MiddlewareChain, PocketMiddlewareContext, EventSink?, Int64) {
        // The request's own middleware run after the client's; its
        // policy replaces the client's as the last middleware. (The
        // client's handling is read field by field: a copy of the whole
        // struct would retain and release each of its fields per request.)
        let chain = options.middleware.isEmpty && options.retry == nil ? self.chain
            : MiddlewareChain(configuration.handling.middleware + options.middleware,
                              policy: options.retry ?? configuration.handling.retry)
        // On the system clock the context keeps no copy of it (an
        // existential copied per request): its origin is the client's.
        let startNanos = startedNanos ?? PocketDeadline.nowNanos()
        let clock: (any PocketRetryClock)?, started: Duration
        if let offset = systemClockOffsetNanos {
            (clock, started) = (nil, .nanoseconds(offset &+ startNanos))
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
        return (chain, context, sink, startNanos)
    }

    /// A cancelled request's error, reported as `.cancelled`; any other
    /// error as it is (already reported).
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
    nonisolated(nonsending) private func attempts<D: ResponseDelivery>(
        _ request: PocketRequest, chain: MiddlewareChain, context: PocketMiddlewareContext,
        started firstStart: Int64, hedging: HedgingPolicyBox?, progress: PocketProgressHandler?,
        sink: EventSink?, _ delivery: D
    ) async throws -> D.Response {
        typealias R = D.Response
        // Only the hooks that do something are called (`MiddlewareChain`):
        // not the retry policy's `adapt` and `observe`, nor a closure
        // middleware's missing ones.
        let observed = !chain.observers.isEmpty
        var delivery = delivery   // carries the task deadline to each attempt's hops
        while true {
            let attempt = try Self.beginAttempt(context: context, sink: sink)
            let attemptStart = attempt == 1 ? firstStart : PocketDeadline.nowNanos()
            var sent = request
            do {
                for adapter in chain.adapters {
                    switch adapter {
                    case .closure(let adapt): sent = try await adapt(sent, context)
                    case .middleware(let i): sent = try await chain.all[i].adapt(sent, context: context)
                    }
                }
                if let deadline = chain.policy?.deadline { try limit(&sent, to: deadline, context: context, attempt: attempt) }
                if PocketDeadline.inUse { try limit(&sent, &delivery, to: context.deadlineNanoseconds, attempt: attempt) }
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
                    ? try await fetching(sent, hedging: hedging, deadline: context.deadlineNanoseconds, attempt: attempt,
                                         sink: sink, progress: progress, delivery)
                    : try await authenticating(&sent, progress: progress, delivery)   // Sources/Pocket/Auth
                failure = accept(&response, sent: sent)
                // A success no hook observes is the caller's at once.
                observing = observed && chain.observes(context)
                if failure == nil, !observing, delivered(response, sent: sent, attempt: attempt, sink: sink) { return response }
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
    nonisolated(nonsending) private func settle<R: ExchangedResponse>(
        _ outcome: Result<R, any Error>, failure: PocketError?, request: PocketRequest, sent: PocketRequest,
        attempt: Int, started: Int64, observing: Bool, chain: MiddlewareChain,
        context: PocketMiddlewareContext, sink: EventSink?
    ) async throws -> R? {
        let retryable = isRetryable(outcome, failure: failure, sent: sent)
        // The attempt's duration, for the hooks (none will run: the clock is not read).
        if observing || retryable || failure != nil {
            context.end(elapsed: .nanoseconds(PocketDeadline.nowNanos() &- started), validationFailure: failure)
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
        let next = retry(request, after: outcome, failure: failure, decision: decision, attempt: attempt, chain: chain,
                         deadline: context.deadline)
        // The one place a retry draws on the client's budget: with it
        // spent, the failure is the caller's as it is.
        if case .success = next, !extraRequests.permitsRetry() {
            sink?.emit(.retryRefused, attempt: attempt, status: Self.head(of: outcome)?.status, error: failure ?? outcome.failure)
            return try finish(Self.refused(outcome), validationFailure: failure.map(Self.refused), request: sent, attempt: attempt, sink: sink)
        }
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
    private static func beginAttempt(context: PocketMiddlewareContext, sink: EventSink?) throws -> Int {
        let attempt = context.attempt + 1
        if Task.isCancelled { throw PocketError(.cancelled, "the request was cancelled") }
        context.begin(attempt: attempt)
        sink?.emit(.running, attempt: attempt)
        return attempt
    }

    /// `sent`'s total timeout cut to what is left of the retry deadline.
    private func limit(_ sent: inout PocketRequest, to deadline: Duration, context: PocketMiddlewareContext, attempt: Int) throws {
        let remaining = deadline - context.elapsed
        guard remaining > .zero else {
            throw PocketError(.totalTimeout, "the retry deadline of \(deadline) passed before attempt \(attempt)")
        }
        var timeouts = sent.timeouts ?? configuration.timeouts
        timeouts.total = min(timeouts.total ?? remaining, remaining)
        sent.timeouts = timeouts
    }

    /// The attempt's hops bounded by `deadline` (the request's, in
    /// nanoseconds after `PocketDeadline.origin`; `.max`: none, nothing to
    /// cut) when it comes before `sent`'s total timeout ends
    /// (`delivery.deadlineNanos`: each hop's total timeout is then cut to
    /// what is left), the time left sent in the deadline header when one is
    /// configured (a hop's total timeout then reports the deadline passing:
    /// `deadlineReached`). Whole nanoseconds throughout: no 128-bit
    /// arithmetic of `Duration` and `ContinuousClock.Instant`. Out of line
    /// and synchronous, like the async `attempts`' other rare steps.
    @inline(never)
    private func limit<D: ResponseDelivery>(_ sent: inout PocketRequest, _ delivery: inout D, to deadline: Int64,
                                            attempt: Int) throws {
        guard deadline != .max else { return }
        let remaining = try cutting(&delivery, sent.timeouts, to: deadline, attempt: attempt)
        if let deadlineHeader { sent.headers[deadlineHeader] = String(PocketDeadline.milliseconds(nanoseconds: remaining)) }
    }

    /// `delivery`'s hops bounded by `deadline` (as `limit`, for the first
    /// attempt of a request that sends no deadline header: `timeouts` are
    /// its own); returns `deadline`.
    @inline(never)
    private func cut<D: ResponseDelivery>(_ delivery: inout D, _ timeouts: PocketTimeouts?, to deadline: Int64) throws -> Int64 {
        if deadline != .max { _ = try cutting(&delivery, timeouts, to: deadline, attempt: 1) }
        return deadline
    }

    /// Sets `delivery.deadlineNanos` to `deadline` when it comes before
    /// the total timeout ends (the request's `timeouts`, else the
    /// client's: `.max` otherwise); returns the nanoseconds left. Throws
    /// `.deadlineExceeded` when it has passed.
    private func cutting<D: ResponseDelivery>(_ delivery: inout D, _ timeouts: PocketTimeouts?, to deadline: Int64,
                                              attempt: Int) throws -> Int64 {
        let now = PocketDeadline.nowNanos()
        guard deadline > now else {
            throw PocketError(.deadlineExceeded, "the task's deadline passed before attempt \(attempt)")
        }
        let remaining = deadline - now
        // The request's total timeout, else the client's (worked out once).
        let total = timeouts.map { $0.total?.nanoseconds ?? .max } ?? engineTimeouts.totalNanos
        delivery.deadlineNanos = remaining < total ? deadline : .max
        return remaining
    }

    /// A hop's total timeout that the task's deadline had cut
    /// (`delivery.deadlineNanos`), reported as the deadline it is: the one
    /// place for every hop, attempt and hedge.
    static func deadlineReached(_ error: any Error) -> any Error {
        guard let error = error as? PocketError, error.code == .totalTimeout else { return error }
        return PocketError(.deadlineExceeded, "the task's deadline passed during the request", underlying: error,
                           response: error.response)
    }

    /// Whether a response that passed validation is the caller's at once
    /// (a success: it passes a validation, or is 2xx/3xx with none); then
    /// `.finished` is reported.
    private func delivered<R: ExchangedResponse>(_ response: R, sent: PocketRequest, attempt: Int, sink: EventSink?) -> Bool {
        guard configuration.validation != nil || sent.validation != nil || (200..<400).contains(response.redirectStatus) else {
            return false
        }
        sink?.emit(.finished, attempt: attempt, status: response.attemptView.status)
        return true
    }

    /// Whether an outcome may be retried: a success never is; nor is a
    /// failure whose body already reached the caller.
    private func isRetryable<R: ExchangedResponse>(_ outcome: Result<R, any Error>, failure: PocketError?, sent: PocketRequest) -> Bool {
        switch outcome {
        case .success(let response):
            return retries(response, failure: failure, sent: sent)
        case .failure(let error):
            return !((error as? PocketError)?.bodyDelivered ?? false)
        }
    }

    /// Whether a response may be retried: it failed validation, or there
    /// is no validation and it is neither 2xx nor 3xx.
    private func retries<R: ExchangedResponse>(_ response: R, failure: PocketError?, sent: PocketRequest) -> Bool {
        failure != nil || (configuration.validation == nil && sent.validation == nil && !(200..<400).contains(response.redirectStatus))
    }

    /// What the hooks see of an outcome.
    private static func view<R: ExchangedResponse>(of outcome: Result<R, any Error>) -> Result<PocketResponse, any Error> {
        switch outcome {
        case .success(let response): return .success(response.attemptView)
        case .failure(let error): return .failure(error)
        }
    }

    /// The wait before the attempt after `attempt`, or the error that ends
    /// the request instead: the attempt cap reached, or a one-shot body.
    private func retry<R: ExchangedResponse>(_ request: PocketRequest, after outcome: Result<R, any Error>, failure: PocketError?,
                                             decision: PocketRetryDecision, attempt: Int, chain: MiddlewareChain,
                                             deadline: ContinuousClock.Instant?) -> Result<Duration, PocketError> {
        let maxAttempts = chain.policy?.maxAttempts ?? PocketRetryPolicy.defaultMaxAttempts
        guard attempt < maxAttempts else {
            return .failure(PocketError(.tooManyAttempts, "\(request.method) \(request.url.absoluteString): \(attempt) attempts made, the most the retry policy's maxAttempts allows (\(maxAttempts))",
                                        underlying: failure ?? outcome.failure, response: Self.head(of: outcome)))
        }
        if let body = request.body, !body.isReplayable {
            return .failure(PocketError(.bodyNotReplayable, "\(request.method) \(request.url.absoluteString) would be retried after attempt \(attempt) (\(Self.describe(outcome))), but its body is one-shot (a stream) and was already sent",
                                        underlying: failure ?? outcome.failure, response: Self.head(of: outcome)))
        }
        let delay: Duration
        switch decision {
        case .retryAfter(let d): delay = max(.zero, d)
        default: // `.retry` from a middleware: the policy's backoff, or at once
            var generator = SystemRandomNumberGenerator()
            delay = chain.policy?.backoff.delay(forRetry: attempt, using: &generator) ?? .zero
        }
        // A wait never sleeps past the task's deadline: the attempt after
        // it could not finish in time.
        if let deadline, ContinuousClock.now + delay >= deadline {
            if let error = outcome.failure as? PocketError, error.code == .deadlineExceeded { return .failure(error) }
            return .failure(PocketError(.deadlineExceeded, "\(request.method) \(request.url.absoluteString): the task's deadline passes before attempt \(attempt + 1) could start (after \(Self.describe(outcome)))",
                                        underlying: failure ?? outcome.failure, response: Self.head(of: outcome)))
        }
        return .success(delay)
    }

    /// A failure the retry budget kept from being retried, marked so.
    private static func refused<R>(_ outcome: Result<R, any Error>) -> Result<R, any Error> {
        guard case .failure(let error) = outcome, let pocket = error as? PocketError else { return outcome }
        return .failure(refused(pocket))
    }

    private static func refused(_ error: PocketError) -> PocketError {
        var error = error
        error.retryBudgetSpent = true
        error.message += " (not retried: the client's retry budget is spent)"
        return error
    }

    /// `.retrying` reported, with the wait.
    private static func retrying<R: ExchangedResponse>(after outcome: Result<R, any Error>, failure: PocketError?, attempt: Int,
                                                       delay: Duration, sink: EventSink?) {
        sink?.emit(.retrying, attempt: attempt, status: head(of: outcome)?.status, error: failure ?? outcome.failure, retryDelay: delay)
    }

    /// `error`, reported as the request's `.finished`.
    private static func finished(_ error: any Error, attempt: Int, sink: EventSink?) -> any Error {
        sink?.emit(.finished, attempt: attempt, error: error)
        return error
    }

    /// The outcome the caller gets, reported as `.finished`.
    private func finish<R: ExchangedResponse>(_ outcome: Result<R, any Error>, validationFailure: PocketError?,
                                              request: PocketRequest, attempt: Int, sink: EventSink?) throws -> R {
        switch outcome {
        case .success(let response):
            if var failure = validationFailure {
                if attempt > 1 { failure.message += " (after \(attempt) attempts)" }
                sink?.emit(.finished, attempt: attempt, status: response.attemptView.status, error: failure)
                throw failure
            }
            sink?.emit(.finished, attempt: attempt, status: response.attemptView.status)
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

    /// The one acceptance step of an attempt's response: why it fails
    /// `sent`'s validation (else the client's), or nil when it passes, with
    /// `sent` kept in it as the request that got it.
    func accept<R: ExchangedResponse>(_ response: inout R, sent: PocketRequest) -> PocketError? {
        if let failure = validationFailure(of: response, for: sent) { return failure }
        response.keep(request: sent)
        return nil
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
