#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Hedged requests: a stage of one attempt (`attempts` in
// PocketClient+Execute.swift), between the middleware and `fetching`. The
// request and each hedge go through `fetching` (the cache step, redirects,
// and the hop: another connection, or another replica of a set): the
// request in the caller's task, each hedge in a task of its own started by
// the client's timer when the delay passes (HedgeRace.swift). The first
// acceptable answer wins and the rest are cancelled, their connections
// closed by the engine (a cancelled request's connection is never pooled).

extension PocketClient {
    /// One attempt's exchange: hedged under `hedging` when the request may
    /// be (idempotent, a body that can be sent again, a collected response),
    /// else `fetching` alone. Inlined into `attempts`: without a policy it
    /// adds a nil check, not an async call's frame.
    @inline(__always)
    nonisolated(nonsending) func fetching<D: ResponseDelivery>(
        _ request: PocketRequest, hedging: HedgingPolicyBox?, deadline: Int64, attempt: Int,
        sink: EventSink?, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        guard let hedging, D.hedges else { return try await fetching(request, progress: progress, delivery) }
        return try await hedged(request, policy: hedging, deadline: deadline, attempt: attempt, sink: sink, progress: progress,
                                delivery)
    }

    /// `fetching` with hedges under `box`'s policy, for a request that may
    /// have them; `deadline`: the request's, in nanoseconds after
    /// `PocketDeadline.origin` (`.max` for none).
    nonisolated(nonsending) private func hedged<D: ResponseDelivery>(
        _ request: PocketRequest, policy box: HedgingPolicyBox, deadline: Int64, attempt: Int,
        sink: EventSink?, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        guard box.maxHedges > 0, request.isIdempotent, request.body?.isReplayable ?? true else {
            return try await fetching(request, progress: progress, delivery)
        }
        // A fixed delay is read from the box; a percentile one (the policy
        // read only then) from the origin's latencies, which the answer joins.
        // (Held across the race as a string and integers: an optional of
        // a `ContinuousClock.Instant`, whose size is known only at run time
        // here, would be handled through value witnesses.)
        var origin: String?
        var started: Int64 = 0
        let delayNanos: Int64
        if let fixed = box.fixedDelayNanos {
            delayNanos = fixed
        } else {
            let policy = box.policy, key = Self.originKey(request.url)
            (origin, started) = (key, PocketDeadline.nowNanos())
            guard case .percentile(let p) = policy.delay, let delay = latencies.percentile(key, p) else {
                // Too few latencies seen yet: the request alone, its latency kept.
                let response = try await fetching(request, progress: progress, delivery)
                latencies.record(key, .nanoseconds(PocketDeadline.nowNanos() &- started), capacity: policy.latencySamples)
                return response
            }
            delayNanos = max(delay, policy.minimumDelay).nanoseconds
        }
        let race = HedgeRace(client: self, request: request, policy: box, delayNanos: delayNanos, deadline: deadline,
                             attempt: attempt, sink: sink, progress: progress, delivery: delivery)
        let response = hasTransport ? try await race.runDetached() : try await race.run()
        if let origin {
            latencies.record(origin, .nanoseconds(PocketDeadline.nowNanos() &- started), capacity: box.policy.latencySamples)
        }
        if race.winner > 0 {
            extraRequests.countHedgeWon()
            sink?.emit(.hedgeWon, attempt: attempt, hedge: race.winner)
        }
        return response
    }

    /// The hedges this client sent, and those whose answer was their
    /// request's, since it started (the hedging budget counts the same
    /// hedges): what hedging cost and what it bought, without observing
    /// every request's `.hedging` and `.hedgeWon` events.
    public var hedgeStatistics: PocketHedgeStatistics { extraRequests.hedgeStatistics }

    /// A hedge of `request` whose total timeout is what is left of the
    /// task's deadline now (nanoseconds after `PocketDeadline.origin`; the
    /// time left sent again when configured).
    func bounded(_ request: PocketRequest, by deadline: Int64) -> PocketRequest {
        var hedge = request
        let left = Duration.nanoseconds(deadline &- PocketDeadline.nowNanos())
        var timeouts = hedge.timeouts ?? configuration.timeouts
        timeouts.total = min(timeouts.total ?? left, left)
        hedge.timeouts = timeouts
        if let deadlineHeader { hedge.headers[deadlineHeader] = String(PocketDeadline.milliseconds(left)) }
        return hedge
    }

    /// `scheme://host:port` of `url`: the key of its latencies.
    static func originKey(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
