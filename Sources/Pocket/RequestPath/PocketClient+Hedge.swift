#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Hedged requests: a stage of one attempt (`attempts` in
// PocketClient+Execute.swift), between the middleware and `fetching`. The
// request and each hedge go through `fetching` (the cache step, redirects,
// and the hop: another connection, or another replica of a set), in child
// tasks of one group; the first acceptable answer wins and the group
// cancels the rest, whose connections the engine closes (a cancelled
// request's connection is never pooled).

extension PocketClient {
    /// One attempt's exchange: hedged under `hedging` when the request may
    /// be (idempotent, a body that can be sent again, a collected response),
    /// else `fetching` alone. Inlined into `attempts`: without a policy it
    /// adds a nil check, not an async call's frame.
    @inline(__always)
    nonisolated(nonsending) func fetching<D: ResponseDelivery>(
        _ request: PocketRequest, hedging: HedgingPolicyBox?, context: PocketMiddlewareContext, attempt: Int,
        sink: EventSink?, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        guard let hedging, D.hedges else { return try await fetching(request, progress: progress, delivery) }
        return try await hedged(request, policy: hedging.policy, context: context, attempt: attempt, sink: sink, progress: progress,
                                delivery)
    }

    /// `fetching` with hedges under `policy`, for a request that may have them.
    nonisolated(nonsending) private func hedged<D: ResponseDelivery>(
        _ request: PocketRequest, policy: PocketHedgingPolicy, context: PocketMiddlewareContext, attempt: Int,
        sink: EventSink?, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        guard policy.maxHedges > 0, request.isIdempotent, request.body?.isReplayable ?? true else {
            return try await fetching(request, progress: progress, delivery)
        }
        let started = ContinuousClock.now
        let origin: String?
        let delay: Duration?
        switch policy.delay {
        case .fixed(let d):
            (origin, delay) = (nil, d)
        case .percentile(let p):
            let key = Self.originKey(request.url)
            (origin, delay) = (key, latencies.percentile(key, p).map { max($0, policy.minimumDelay) })
        }
        guard let delay else {
            // Too few latencies seen yet: the request alone, its latency kept.
            let response = try await fetching(request, progress: progress, delivery)
            if let origin { latencies.record(origin, .now - started, capacity: policy.latencySamples) }
            return response
        }
        let (winner, outcome) = await race(request, policy: policy, delay: delay, deadline: context.deadline, attempt: attempt,
                                           sink: sink, progress: progress, delivery)
        if case .success = outcome, let origin {
            latencies.record(origin, .now - started, capacity: policy.latencySamples)
        }
        if winner > 0, case .success = outcome { sink?.emit(.hedgeWon, attempt: attempt, hedge: winner) }
        return try outcome.get()
    }

    /// What one runner of a race brings back: its number (0 for the request,
    /// then each hedge's) and outcome, or the hedging timer.
    private enum Arrival<R>: @unchecked Sendable {
        // Unchecked: a runner's outcome is handed from its child task to the
        // racing task once, and only that task touches it after.
        case timer
        case done(Int, Result<R, any Error>)
    }

    /// The request and its hedges: the number and outcome of the first
    /// acceptable answer, or of the last answer when none was.
    nonisolated(nonsending) private func race<D: ResponseDelivery>(
        _ request: PocketRequest, policy: PocketHedgingPolicy, delay: Duration, deadline: ContinuousClock.Instant?,
        attempt: Int, sink: EventSink?, progress: PocketProgressHandler?, _ delivery: D
    ) async -> (Int, Result<D.Response, any Error>) {
        let validated = request.validation != nil || configuration.validation != nil
        return await withTaskGroup(of: Arrival<D.Response>.self) { group in
            func run(_ n: Int, _ request: PocketRequest) {
                group.addTask {
                    do { return .done(n, .success(try await self.fetching(request, progress: progress, delivery))) } catch {
                        return .done(n, .failure(error))
                    }
                }
            }
            func arm() {
                group.addTask {
                    try? await Task.sleep(for: delay)
                    return .timer
                }
            }
            run(0, request)
            arm()
            var hedges = 0, running = 1
            var last: (Int, Result<D.Response, any Error>)?
            /// Sends the next hedge when the policy and the budget allow it.
            func hedge() -> Bool {
                guard hedges < policy.maxHedges, !Task.isCancelled, deadline.map({ $0 > .now }) ?? true,
                      extraRequests.permitsHedge() else { return false }
                hedges += 1
                running += 1
                sink?.emit(.hedging, attempt: attempt, hedge: hedges)
                run(hedges, deadline.map { bounded(request, by: $0) } ?? request)
                if hedges < policy.maxHedges { arm() }
                return true
            }
            while let arrival = await group.next() {
                switch arrival {
                case .timer:
                    if running > 0 { _ = hedge() }
                case .done(let n, let outcome):
                    running -= 1
                    if wins(outcome, policy: policy, request: request, validated: validated) {
                        group.cancelAll()
                        await Self.discardAll(&group)
                        return (n, outcome)
                    }
                    if case .success(let response)? = last?.1 { await response.discardBody() }
                    last = (n, outcome)
                    // A non-fatal answer: the next hedge goes at once.
                    if running == 0, !hedge() {
                        group.cancelAll()
                        await Self.discardAll(&group)
                        return (n, outcome)
                    }
                }
            }
            return last ?? (0, .failure(PocketError(.cancelled, "the request was cancelled")))
        }
    }

    /// A hedge of `request` whose total timeout is what is left of the
    /// task's deadline now (the time left sent again when configured).
    private func bounded(_ request: PocketRequest, by deadline: ContinuousClock.Instant) -> PocketRequest {
        var hedge = request
        let left = deadline - .now
        var timeouts = hedge.timeouts ?? configuration.timeouts
        timeouts.total = min(timeouts.total ?? left, left)
        hedge.timeouts = timeouts
        if let deadlineHeader { hedge.headers[deadlineHeader] = String(PocketDeadline.milliseconds(left)) }
        return hedge
    }

    /// Whether a runner's outcome ends the race: a response that passes the
    /// request's validation, or (with none) whose status is not non-fatal.
    private func wins<R: ExchangedResponse>(_ outcome: Result<R, any Error>, policy: PocketHedgingPolicy,
                                            request: PocketRequest, validated: Bool) -> Bool {
        guard case .success(let response) = outcome else { return false }
        if validated { return validationFailure(of: response, for: request) == nil }
        return !policy.nonFatalStatuses.contains(response.attemptView.status)
    }

    /// Waits for the cancelled runners and frees what their answers hold.
    private static func discardAll<R: ExchangedResponse>(_ group: inout TaskGroup<Arrival<R>>) async {
        while let arrival = await group.next() {
            if case .done(_, .success(let response)) = arrival { await response.discardBody() }
        }
    }

    /// `scheme://host:port` of `url`: the key of its latencies.
    static func originKey(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
