#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response the redirect loop can look at, record the chain in, and drop.
protocol RedirectableResponse: Sendable {
    var redirectStatus: Int { get }
    var redirectHead: PocketResponseHead { get }
    /// How long this hop took (for a chain-wide total deadline).
    var hopDuration: Duration { get }
    /// Records where the response came from and the hops taken to it.
    mutating func record(url: URL, redirects: [PocketRedirectHop])
    /// Frees what the 3xx still holds before the next hop.
    func discardRedirectBody() async
}

extension PocketClient {
    /// Runs a hop for `request`, then for each redirect the policy follows.
    ///
    /// The first hop is the whole cost of a request that is not redirected:
    /// the policy is read, one status compared, and the response records its
    /// URL (no allocation). The chain's state exists only after a 3xx.
    ///
    /// A progress handler's `finish` (the end of `PocketProgressHandler.stream`)
    /// comes once, when the final response is complete: the stream of
    /// updates spans every hop, and a redirect's end does not close it.
    @inline(__always) // into the request path: see `execute`
    nonisolated(nonsending) func followingRedirects<D: ResponseDelivery>(
        _ request: PocketRequest, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        let follows = request.redirects?.follows ?? configuration.redirects.follows
        let gate = follows ? ProgressFinishGate.wrap(progress) : nil
        var response: D.Response
        do {
            response = try await hopWithCookies(request, gate?.handler ?? progress, delivery)
        } catch {
            gate?.gate.markFinal()
            throw error
        }
        guard follows, RedirectFollower.isRedirect(response.redirectStatus) else {
            gate?.gate.markFinal()
            response.record(url: request.url, redirects: [])
            return response
        }
        return try await redirecting(request, after: response, progress: progress, gate: gate, delivery)
    }

    /// The redirects after `response`, the 3xx that answered `request`
    /// (`gate`: the first hop's progress gate, if it has one).
    nonisolated(nonsending) private func redirecting<D: ResponseDelivery>(
        _ request: PocketRequest, after first: D.Response, progress: PocketProgressHandler?,
        gate firstGate: (handler: PocketProgressHandler, gate: ProgressFinishGate)?, _ delivery: D
    ) async throws -> D.Response {
        var response = first
        var gate = firstGate
        var follower = RedirectFollower(policy: request.redirects ?? configuration.redirects, request: request,
                                        clientTimeouts: configuration.timeouts)
        do {
            while let next = try await follower.next(after: response.redirectHead, took: response.hopDuration) {
                await response.discardRedirectBody()
                gate = ProgressFinishGate.wrap(progress)
                response = try await hopWithCookies(next, gate?.handler ?? progress, delivery)
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

extension PocketResponse: RedirectableResponse {
    var redirectStatus: Int { status }
    var redirectHead: PocketResponseHead { head }
    var hopDuration: Duration { timings.total }
    mutating func record(url: URL, redirects: [PocketRedirectHop]) {
        self.url = url
        self.redirects = redirects
    }
    func discardRedirectBody() async {} // collected already; dropped with the value
}

extension PocketStreamingResponse: RedirectableResponse {
    var redirectStatus: Int { status }
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

/// One request's redirect chain: turns each 3xx into the next request (RFC
/// 9110 §15.4) and enforces the policy. Created only once a redirect arrives,
/// so a request without one pays nothing for it.
struct RedirectFollower {
    let policy: PocketRedirectPolicy
    /// The request sent last (the one the current response answers).
    private(set) var request: PocketRequest
    /// The hops followed so far.
    private(set) var hops: [PocketRedirectHop] = []
    /// Method and URL of every request sent in the chain.
    private var sent: [String]
    /// What the chain's hops took so far, against a total deadline.
    private var elapsed: Duration = .zero

    /// The client's timeouts, for a request that has none of its own.
    private let clientTimeouts: PocketTimeouts
    /// The first request's total deadline, shared by the whole chain.
    private let chainTotal: Duration?

    init(policy: PocketRedirectPolicy, request: PocketRequest, clientTimeouts: PocketTimeouts) {
        self.policy = policy
        self.clientTimeouts = clientTimeouts
        self.chainTotal = (request.timeouts ?? clientTimeouts).total
        self.request = request
        self.sent = [Self.key(request)]
    }

    /// Whether `status` is one Pocket follows.
    static func isRedirect(_ status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// After `head` answered `request` (taking `took`): the request to send
    /// next, or nil when `head` is the response (not a redirect, no
    /// `Location`, or the hook stopped). Throws when the policy forbids the hop.
    mutating func next(after head: PocketResponseHead, took: Duration) async throws -> PocketRequest? {
        guard policy.follows, Self.isRedirect(head.status), let location = head.headers["Location"] else { return nil }
        let proposed = try prepare(location: location, head: head)
        var chosen = proposed
        if let hook = policy.onRedirect {
            switch try await hook(PocketRedirect(response: head, from: request.url, request: proposed, hop: hops.count + 1)) {
            case .follow: break
            case .modify(let r): chosen = r
            case .stop: return nil
            }
        }
        try check(chosen, head: head)
        elapsed += took
        if let total = chainTotal {
            // The total deadline covers the whole chain, not each hop.
            guard elapsed < total else {
                throw PocketError(.totalTimeout, "the \(total) total timeout passed during redirect \(hops.count + 1)", response: head)
            }
            var t = chosen.timeouts ?? clientTimeouts
            t.total = total - elapsed
            chosen.timeouts = t
        }
        hops.append(PocketRedirectHop(status: head.status, from: request.url, to: chosen.url, method: chosen.method))
        sent.append(Self.key(chosen))
        request = chosen
        return chosen
    }

    /// The request a redirect asks for, before the hook and the checks.
    private func prepare(location: String, head: PocketResponseHead) throws -> PocketRequest {
        let trimmed = String(location.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        guard !trimmed.isEmpty, let resolved = URL(string: trimmed, relativeTo: request.url)?.absoluteURL else {
            throw PocketError(.badRedirectLocation, "the \(head.status) redirect's Location is not a URL: \(location)", response: head)
        }
        let target = Target(resolved)
        if let problem = target.problem {
            throw PocketError(.badRedirectLocation, "the \(head.status) redirect leads nowhere Pocket can go: \(problem)", response: head)
        }
        var next = request
        next.url = resolved
        switch head.status {
        case 301 where next.method == .post, 302 where next.method == .post, 303 where next.method != .head:
            Self.dropBody(&next)
        default:
            break
        }
        if !PocketClient.sameOrigin(request.url, resolved) {
            for name in ["Authorization", "Proxy-Authorization", "Cookie"] { next.headers.remove(name) }
        }
        return next
    }

    /// The policy's limits, applied to the request that will really go.
    private func check(_ next: PocketRequest, head: PocketResponseHead) throws {
        try Self.checkScheme(from: request.url, to: next.url, status: head.status, head: head)
        if hops.count >= policy.maxHops {
            throw PocketError(.tooManyRedirects, "more than \(policy.maxHops) redirects: \(chain(then: next.url))", response: head)
        }
        if request.url.scheme?.lowercased() == "https", next.url.scheme?.lowercased() == "http", !policy.allowsInsecureDowngrade {
            throw PocketError(.insecureRedirect, "refusing the \(head.status) redirect from https to http (\(next.url.absoluteString)); RedirectPolicy.allowsInsecureDowngrade allows it", response: head)
        }
        if sent.contains(Self.key(next)) {
            throw PocketError(.redirectLoop, "redirect loop: \(chain(then: next.url))", response: head)
        }
        if let body = next.body, !body.isReplayable, body == request.body {
            throw PocketError(.bodyNotReplayable, "the \(head.status) redirect keeps the method and body, but the body is one-shot (a stream) and was already sent; use bytes or a file to let it be sent again", response: head)
        }
    }

    private func chain(then url: URL) -> String {
        ([hops.first?.from ?? request.url] + hops.map(\.to) + [url]).map(\.absoluteString).joined(separator: " → ")
    }

    private static func key(_ r: PocketRequest) -> String { "\(r.method.rawValue) \(r.url.absoluteString)" }

    /// A GET after POST (or after 303) has no content: the body and the
    /// fields that describe it go (RFC 9110 §15.4).
    private static func dropBody(_ r: inout PocketRequest) {
        r.method = .get
        r.body = nil
        r.expectContinue = nil
        for name in ["Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location",
                     "Transfer-Encoding", "Digest", "Content-Digest"] {
            r.headers.remove(name)
        }
    }

    /// A server's redirect never moves a request onto another transport: from
    /// `http`/`https` only to `http`/`https` (never to a local Unix socket,
    /// where a service such as Docker's API may listen); from a Unix socket
    /// only to the same socket or to `http`/`https`.
    static func checkScheme(from: URL, to: URL, status: Int, head: PocketResponseHead) throws {
        let next = Target(to)
        guard next.problem == nil, let path = next.unixPath else { return }
        if let current = Target(from).unixPath, current == path { return }
        throw PocketError(.forbiddenRedirect, "refusing the \(status) redirect from \(from.scheme ?? "?") to \(to.scheme ?? "?") (\(to.absoluteString)): a redirect never leads into a local Unix socket", response: head)
    }
}
