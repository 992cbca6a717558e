#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The cache step of the one request path (stage 3 of
// PocketClient+Execute.swift): an attempt goes through here when the client
// has a cache or the request a cache policy. A fresh hit returns without a
// request; a stale entry becomes a conditional request; a miss goes to the
// network and its response is stored when RFC 9111 allows.

extension PocketClient {
    /// What the cache does for one GET or HEAD.
    enum CacheDecision {
        /// The request bypasses the cache (its own conditional or Range fields).
        case bypass
        /// A stored response may be used as it is; its age.
        case hit(CacheEntry, age: Double)
        /// A stored response needs a conditional request.
        case revalidate(CacheEntry)
        /// Nothing usable is stored.
        case miss
    }

    /// RFC 9111 §4 for `request` against what `cache` holds.
    func decide(_ request: PocketRequest, cache: PocketResponseCache, policy: PocketCachePolicy) -> CacheDecision {
        let ownConditions = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"]
            .contains { request.headers.contains($0) }
        guard !ownConditions else { return .bypass }
        let requestDirectives = CacheDirectives(request.headers)
        guard policy != .reloadIgnoringCache, !requestDirectives.has("no-store"),
              let entry = cache.lookup(request, defaults: configuration.defaultHeaders) else { return .miss }
        let directives = CacheDirectives(entry.head.headers)
        let lifetime = CacheRules.lifetime(entry.head.headers, directives: directives, status: entry.head.status,
                                           heuristic: cache.heuristicFreshness, responseTime: entry.head.responseTime)
        let age = CacheRules.age(entry.head.headers, requestTime: entry.head.requestTime, responseTime: entry.head.responseTime,
                                 now: cache.now())
        var fresh = lifetime > age
        if let maxAge = requestDirectives.seconds("max-age"), age > maxAge { fresh = false }
        if let minFresh = requestDirectives.seconds("min-fresh"), lifetime - age < minFresh { fresh = false }
        var staleAllowed = policy == .returnCacheElseLoad || policy == .onlyIfCached
        if let maxStale = requestDirectives.values["max-stale"] {
            // A bare max-stale accepts any staleness (RFC 9111 §5.2.1.2).
            staleAllowed = staleAllowed || maxStale == nil || age - lifetime <= (requestDirectives.seconds("max-stale") ?? 0)
        }
        let mustValidate = directives.has("no-cache") || requestDirectives.has("no-cache")
        if !mustValidate, fresh || (staleAllowed && !directives.has("must-revalidate")) { return .hit(entry, age: age) }
        if request.method == .get, policy != .onlyIfCached,
           entry.head.headers.contains("ETag") || entry.head.headers.contains("Last-Modified") {
            return .revalidate(entry)
        }
        return .miss
    }

    /// Whether `method` leaves stored responses as they are (RFC 9111 §4.4).
    static func isSafe(_ method: PocketMethod) -> Bool {
        ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method.rawValue)
    }

    /// The cache step of `execute` (for a collected or streamed body; a
    /// sink's is a collected one written into the sink, a download bypasses
    /// it), as `request.cachePolicy` says: a fresh hit answers from the
    /// store; a stale entry with validators becomes a conditional request,
    /// whose 304 answers from the store; anything else goes to the network
    /// (redirects and hops) and is stored when RFC 9111 and `willCache` allow.
    nonisolated(nonsending) func caching<D: CachingDelivery>(_ request: PocketRequest, progress: PocketProgressHandler?,
                                                             _ delivery: D) async throws -> D.Response {
        let policy = request.cachePolicy ?? .useProtocol
        guard let cache = responseCache else {
            if policy == .onlyIfCached { throw Self.notCached(request, "the client has no cache") }
            return try await followingRedirects(request, progress: progress, delivery)
        }
        let method = request.method
        guard method == .get || method == .head else {
            let response = try await followingRedirects(request, progress: progress, delivery)
            if !Self.isSafe(method), (200..<400).contains(response.redirectStatus) {
                cache.invalidate(after: request, response: response.redirectHead)
            }
            return response
        }
        var conditional: CacheEntry?
        switch decide(request, cache: cache, policy: policy) {
        case .bypass:
            return try await followingRedirects(request, progress: progress, delivery)
        case .hit(let entry, let age):
            if let answer = delivery.stored(entry, head: entry.head, age: age, request: request, cache: cache) {
                cache.count(\.hits)
                return answer
            }
            cache.count(\.corruptEntries)
        case .revalidate(let entry):
            conditional = entry
        case .miss:
            break
        }
        if conditional == nil, policy == .onlyIfCached { throw Self.notCached(request, "nothing usable is stored for it") }
        var sent = request
        if let entry = conditional {
            if let etag = entry.head.headers["ETag"] { sent.headers["If-None-Match"] = etag }
            if let date = entry.head.headers["Last-Modified"] { sent.headers["If-Modified-Since"] = date }
        }
        let requestTime = cache.now()
        var response = try await followingRedirects(sent, progress: progress, delivery)
        if let entry = conditional, response.redirectStatus == 304, response.redirects.isEmpty {
            await response.discardBody()
            let head = refreshed(entry.head, by: response.redirectHead.headers, requestTime: requestTime, cache: cache)
            if var answer = delivery.stored(entry, head: head, age: 0, request: request, cache: cache) {
                cache.store.update(entry, head: head)
                cache.count(\.revalidations)
                answer.revalidated = true
                delivery.revalidated(&answer, by: response)
                return answer
            }
            // The stored body went meanwhile (evicted or corrupt): ask again, plainly.
            cache.count(\.misses)
            response = try await followingRedirects(request, progress: progress, delivery)
        } else {
            cache.count(\.misses)
        }
        if response.redirects.isEmpty, method == .get,
           let (writer, stored) = cache.writer(for: response.attemptView, request: request, defaults: configuration.defaultHeaders,
                                               requestTime: requestTime),
           delivery.store(&response, stored: stored, into: writer) {
            cache.count(\.stores)
        }
        return response
    }

    /// The pieces a stored body is streamed in: memory stays at one piece,
    /// however large the entry.
    static let cacheChunkSize = 64 << 10

    /// A stored response as a stream: its body from `reader`, piece by
    /// piece as the caller reads (nil: `response.body`, for a HEAD).
    static func streamed(_ response: PocketResponse, from reader: (any CacheBodyReader)? = nil) -> PocketStreamingResponse {
        var streamed = PocketStreamingResponse(collected: response)
        streamed.body.source = reader
        streamed.url = response.url
        streamed.fromCache = true
        return streamed
    }

    /// RFC 9111 §3.2: a 304's fields replace the stored ones, framing aside.
    func refreshed(_ stored: CachedHead, by headers: PocketHeaders, requestTime: Double, cache: PocketResponseCache) -> CachedHead {
        var head = stored
        let framing: Set<String> = ["content-length", "transfer-encoding", "content-encoding", "content-range", "connection", "keep-alive"]
        for name in Set(headers.fields.map { $0.name.lowercased() }) where !framing.contains(name) {
            head.headers.remove(name)
            for value in headers.values(for: name) { head.headers.add(name: name, value: value) }
        }
        head.requestTime = requestTime
        head.responseTime = cache.now()
        return head
    }

    /// A stored response as the caller gets it: `Age` set (RFC 9111 §5.1).
    static func cached(_ head: CachedHead, body: Data, age: Double, url: URL, request: PocketRequest) -> PocketResponse {
        var headers = head.headers
        headers["Age"] = String(Int(max(0, age)))
        var response = PocketResponse(status: head.status, reason: head.reason, headers: headers, body: body)
        response.fromCache = true
        response.record(url: url, redirects: [])
        return response
    }

    static func notCached(_ request: PocketRequest, _ why: String) -> PocketError {
        PocketError(.notCached, "\(request.method) \(request.url.absoluteString): only-if-cached, but \(why)")
    }
}
