#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response the redirect loop can look at, record the chain in, and drop.
protocol RedirectableResponse: Sendable {
    var redirectHead: ResponseHead { get }
    /// How long this hop took (for a chain-wide total deadline).
    var hopDuration: Duration { get }
    /// Records where the response came from and the hops taken to it.
    mutating func record(url: URL, redirects: [RedirectHop])
    /// Frees what the 3xx still holds before the next hop.
    func discardRedirectBody() async
}

extension PocketClient {
    /// Runs `hop` for `request`, then for each redirect the policy follows.
    ///
    /// The first hop is the whole cost of a request that is not redirected:
    /// the policy is read, one status compared, and the response records its
    /// URL (no allocation). The chain's state exists only after a 3xx.
    ///
    /// A progress handler's `finish` (the end of `ProgressHandler.stream`)
    /// is held back to the end of the chain, so a stream of updates spans
    /// every hop.
    func followingRedirects<R: RedirectableResponse>(
        _ request: Request, progress: ProgressHandler?,
        _ hop: (Request, ProgressHandler?) async throws -> R
    ) async throws -> R {
        let policy = request.redirects ?? configuration.redirects
        guard policy.follows else {
            var response = try await hop(request, progress)
            response.record(url: request.url, redirects: [])
            return response
        }
        let perHop = progress?.withoutFinish
        defer { progress?.finish?() }
        var response = try await hop(request, perHop)
        guard RedirectFollower.isRedirect(response.redirectHead.status) else {
            response.record(url: request.url, redirects: [])
            return response
        }
        var follower = RedirectFollower(policy: policy, request: request, clientTimeouts: configuration.timeouts)
        while let next = try await follower.next(after: response.redirectHead, took: response.hopDuration) {
            await response.discardRedirectBody()
            response = try await hop(next, perHop)
        }
        response.record(url: follower.request.url, redirects: follower.hops)
        return response
    }
}

extension ProgressHandler {
    /// The same reports without `finish`, for one hop of several.
    var withoutFinish: ProgressHandler {
        finish == nil ? self : ProgressHandler(interval: interval, report: report, finish: nil)
    }
}

extension Response: RedirectableResponse {
    var redirectHead: ResponseHead { ResponseHead(status: status, reason: reason, headers: headers) }
    var hopDuration: Duration { timings.total }
    mutating func record(url: URL, redirects: [RedirectHop]) {
        self.url = url
        self.redirects = redirects
    }
    func discardRedirectBody() async {} // collected already; dropped with the value
}

extension StreamingResponse: RedirectableResponse {
    var redirectHead: ResponseHead { head }
    var hopDuration: Duration { .zero } // the head came; the deadline of each hop still holds
    mutating func record(url: URL, redirects: [RedirectHop]) {
        self.url = url
        self.redirects = redirects
    }

    /// Reads a small 3xx body to the end so its connection goes back to the
    /// pool; a large one is dropped with its connection.
    func discardRedirectBody() async {
        _ = try? await body.collect(upTo: 64 << 10)
    }
}
