#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Pocket

/// A transport with canned responses per method and path (TyphoonRestClient's
/// stub connection): the same requests, endpoints and middleware run in
/// tests with no network. Install it as `Configuration.handling.transport`.
///
/// ```swift
/// import PocketTesting
///
/// let stub = PocketStubTransport()
/// stub.stub(.get, "/users/7", .json(#"{"id":7}"#))
/// stub.stub(.post, "/users", .status(503), .status(201))   // first 503, then 201 (last repeats)
/// stub.stub(.get, "/slow", PocketStubResponse(status: 200, delay: .seconds(1)))
/// stub.stub(.get, "/down", .failure(PocketError(.connectionRefused, "stubbed")))
/// var config = PocketClient.Configuration()
/// config.handling.transport = stub
/// ```
///
/// A request with no stub fails with `.stubNotFound` (never a silent 404).
/// Paths match exactly (percent-decoded, without the query), or by a
/// template segment in braces (`/users/{id}`). Every request received is kept.
public final class PocketStubTransport: PocketTransport {
    private struct Route {
        var method: PocketMethod
        var segments: [Substring]
        var responses: [PocketStubResponse]
        var served = 0
    }

    private struct State {
        var routes: [Route] = []
        var received: [PocketRequest] = []
    }

    private let state = Lock(State())
    private let clock: any PocketRetryClock

    /// `clock` times the stubs' delays (the system clock by default).
    public init(clock: any PocketRetryClock = PocketSystemRetryClock()) {
        self.clock = clock
    }

    /// Answers `method` `path` with `responses` in turn; the last one repeats.
    /// A later stub for the same method and path replaces this one.
    public func stub(_ method: PocketMethod, _ path: String, _ responses: PocketStubResponse...) {
        stub(method, path, responses: responses)
    }

    /// As `stub(_:_:_:)`, with an array.
    public func stub(_ method: PocketMethod, _ path: String, responses: [PocketStubResponse]) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let responses = responses.isEmpty ? [PocketStubResponse(status: 200)] : responses
        state.withLock { s in
            s.routes.removeAll { $0.method == method && $0.segments == segments }
            s.routes.append(Route(method: method, segments: segments, responses: responses))
        }
    }

    /// Every request received, in order (as sent, after middleware).
    public var requests: [PocketRequest] { state.withLock { $0.received } }

    /// Forgets received requests (stubs stay).
    public func reset() { state.withLock { $0.received = [] } }

    /// The canned answer for `request`, after its delay; `.stubNotFound` when there is none.
    public func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        let path = request.url.path(percentEncoded: false)
        let segments = (path.isEmpty ? "/" : path).split(separator: "/", omittingEmptySubsequences: false)
        let canned: PocketStubResponse? = state.withLock { s in
            s.received.append(request)
            guard let i = s.routes.lastIndex(where: { $0.method == request.method && Self.matches($0.segments, segments) })
            else { return nil }
            let n = min(s.routes[i].served, s.routes[i].responses.count - 1)
            s.routes[i].served += 1
            return s.routes[i].responses[n]
        }
        guard let canned else {
            throw PocketError(.stubNotFound, "no stub for \(request.method) \(path)")
        }
        if let delay = canned.delay, delay > .zero {
            do {
                try await clock.sleep(for: delay)
            } catch {
                throw PocketError(.cancelled, "the request was cancelled", underlying: error)
            }
        }
        if Task.isCancelled { throw PocketError(.cancelled, "the request was cancelled") }
        if let error = canned.error { throw error }
        var timings = PocketTimings()
        timings.total = canned.delay ?? .zero
        timings.firstByte = timings.total
        timings.bytesReceived = canned.body.count
        var headers = canned.headers
        if !headers.contains("Content-Length") { headers["Content-Length"] = String(canned.body.count) }
        return PocketResponse(status: canned.status, reason: "", headers: headers,
                        body: request.method == .head ? Data() : canned.body, timings: timings)
    }

    private static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        guard pattern.count == path.count else { return false }
        for (p, s) in zip(pattern, path) where p != s {
            guard p.first == "{", p.last == "}", !s.isEmpty else { return false }
        }
        return true
    }
}
