#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response the redirect loop can look at, record the chain in, and drop.
protocol RedirectableResponse: Sendable {
    var redirectHead: PocketResponseHead { get }
    /// How long this hop took (for a chain-wide total deadline).
    var hopDuration: Duration { get }
    /// Records where the response came from and the hops taken to it.
    mutating func record(url: URL, redirects: [PocketRedirectHop])
    /// Frees what the 3xx still holds before the next hop.
    func discardRedirectBody() async
}

extension PocketClient {
    /// The engine path of `send`: `request` and the redirects it leads to,
    /// each one engine request collected in memory.
    func sendFollowingRedirects(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await followingRedirects(request, progress: progress) { request, progress in
            try await run(request, InFlightRequest(engine: engine, progress: progress))
        }
    }

    /// Runs `hop` for `request`, then for each redirect the policy follows.
    ///
    /// The first hop is the whole cost of a request that is not redirected:
    /// the policy is read, one status compared, and the response records its
    /// URL (no allocation). The chain's state exists only after a 3xx.
    ///
    /// A progress handler's `finish` (the end of `PocketProgressHandler.stream`)
    /// comes once, when the final response is complete: the stream of
    /// updates spans every hop, and a redirect's end does not close it.
    func followingRedirects<R: RedirectableResponse>(
        _ request: PocketRequest, progress: PocketProgressHandler?,
        _ hop: (PocketRequest, PocketProgressHandler?) async throws -> R
    ) async throws -> R {
        let policy = request.redirects ?? configuration.redirects
        guard policy.follows else {
            var response = try await hop(request, progress)
            response.record(url: request.url, redirects: [])
            return response
        }
        var gate = ProgressFinishGate.wrap(progress)
        var response: R
        do {
            response = try await hop(request, gate?.handler ?? progress)
        } catch {
            gate?.gate.markFinal()
            throw error
        }
        guard RedirectFollower.isRedirect(response.redirectHead.status) else {
            gate?.gate.markFinal()
            response.record(url: request.url, redirects: [])
            return response
        }
        var follower = RedirectFollower(policy: policy, request: request, clientTimeouts: configuration.timeouts)
        do {
            while let next = try await follower.next(after: response.redirectHead, took: response.hopDuration) {
                await response.discardRedirectBody()
                gate = ProgressFinishGate.wrap(progress)
                response = try await hop(next, gate?.handler ?? progress)
            }
        } catch {
            gate?.gate.markFinal()
            throw error
        }
        gate?.gate.markFinal()
        response.record(url: follower.request.url, redirects: follower.hops)
        return response
    }
}

/// Passes a hop's `finish` on only if that hop's response is the final one:
/// the hop may end before or after the redirect loop decides (a streamed
/// body ends long after its head), so whichever comes second calls it.
final class ProgressFinishGate: Sendable {
    private struct State {
        var final = false
        var finished = false
        var called = false
    }

    private let state = Lock(State())
    private let finish: @Sendable () -> Void

    private init(finish: @escaping @Sendable () -> Void) { self.finish = finish }

    /// A handler for one hop and its gate; nil when `progress` has no `finish`.
    static func wrap(_ progress: PocketProgressHandler?) -> (handler: PocketProgressHandler, gate: ProgressFinishGate)? {
        guard let progress, let finish = progress.finish else { return nil }
        let gate = ProgressFinishGate(finish: finish)
        var handler = progress // every setting kept; only the end is gated
        handler.finish = { gate.hopFinished() }
        return (handler, gate)
    }

    /// The hop's request ended.
    func hopFinished() { update { $0.finished = true } }

    /// The hop's response is the one returned (or its error is thrown).
    func markFinal() { update { $0.final = true } }

    private func update(_ change: (inout State) -> Void) {
        let call = state.withLock { s -> Bool in
            change(&s)
            guard s.final, s.finished, !s.called else { return false }
            s.called = true
            return true
        }
        if call { finish() }
    }
}

extension PocketResponse: RedirectableResponse {
    var redirectHead: PocketResponseHead { head }
    var hopDuration: Duration { timings.total }
    mutating func record(url: URL, redirects: [PocketRedirectHop]) {
        self.url = url
        self.redirects = redirects
    }
    func discardRedirectBody() async {} // collected already; dropped with the value
}

extension PocketStreamingResponse: RedirectableResponse {
    var redirectHead: PocketResponseHead { head }
    var hopDuration: Duration { .zero } // the head came; the deadline of each hop still holds
    mutating func record(url: URL, redirects: [PocketRedirectHop]) {
        self.url = url
        self.redirects = redirects
    }

    /// Reads a small 3xx body to the end so its connection goes back to the
    /// pool; a large one is dropped with its connection.
    func discardRedirectBody() async {
        _ = try? await body.collect(upTo: 64 << 10)
    }
}
