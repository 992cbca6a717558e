#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The cache step of the one request path: the hop of `send` (stage 2-4 of
// PocketClient+Execute.swift) goes through here when the client has a
// cache or the request a cache policy. A fresh hit returns without a
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

    /// `exchange` through the client's cache, as `request.cachePolicy` says.
    func caching(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        let policy = request.cachePolicy ?? .useProtocol
        guard let cache = responseCache else {
            if policy == .onlyIfCached { throw Self.notCached(request, "the client has no cache") }
            return try await exchange(request, progress: progress)
        }
        let method = request.method
        guard method == .get || method == .head else {
            let response = try await exchange(request, progress: progress)
            if !Self.isSafe(method), (200..<400).contains(response.status) { cache.invalidate(after: request, response: response.head) }
            return response
        }
        switch decide(request, cache: cache, policy: policy) {
        case .bypass:
            return try await exchange(request, progress: progress)
        case .hit(let entry, let age):
            if let body = cache.store.body(of: entry) {
                cache.count(\.hits)
                return Self.cached(entry.head, body: method == .head ? Data() : body, age: age, url: request.url, request: request)
            }
            cache.count(\.corruptEntries)
        case .revalidate(let entry):
            return try await revalidate(request, entry: entry, cache: cache, progress: progress)
        case .miss:
            break
        }
        if policy == .onlyIfCached { throw Self.notCached(request, "nothing usable is stored for it") }
        cache.count(\.misses)
        return try await fetch(request, cache: cache, progress: progress)
    }

    /// `streamExchange` through the client's cache: a hit or a 304 answers
    /// with the stored body, read from the store in pieces of at most
    /// `cacheChunkSize` as the caller reads; a storable response from the
    /// network is stored as its body is read (written to the disk store
    /// chunk by chunk, kept only if the body is read to its end).
    func cachingStream(_ request: PocketRequest, bufferSize: Int, progress: PocketProgressHandler?) async throws -> PocketStreamingResponse {
        let policy = request.cachePolicy ?? .useProtocol
        guard let cache = responseCache else {
            if policy == .onlyIfCached { throw Self.notCached(request, "the client has no cache") }
            return try await streamExchange(request, bufferSize: bufferSize, progress: progress)
        }
        let method = request.method
        guard method == .get || method == .head else {
            let response = try await streamExchange(request, bufferSize: bufferSize, progress: progress)
            if !Self.isSafe(method), (200..<400).contains(response.status) { cache.invalidate(after: request, response: response.head) }
            return response
        }
        var conditional: CacheEntry?
        switch decide(request, cache: cache, policy: policy) {
        case .bypass:
            return try await streamExchange(request, bufferSize: bufferSize, progress: progress)
        case .hit(let entry, let age):
            if method == .head {
                cache.count(\.hits)
                return Self.streamed(Self.cached(entry.head, body: Data(), age: age, url: request.url, request: request))
            }
            if let reader = cache.store.bodyReader(of: entry, chunkSize: Self.cacheChunkSize) {
                cache.count(\.hits)
                return Self.streamed(Self.cached(entry.head, body: Data(), age: age, url: request.url, request: request), from: reader)
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
        var response = try await streamExchange(sent, bufferSize: bufferSize, progress: progress)
        if let entry = conditional, response.status == 304, response.redirects.isEmpty {
            await response.discardBody()
            let head = refreshed(entry.head, by: response.headers, requestTime: requestTime, cache: cache)
            if let reader = cache.store.bodyReader(of: entry, chunkSize: Self.cacheChunkSize) {
                cache.store.update(entry, head: head)
                cache.count(\.revalidations)
                var answer = Self.streamed(Self.cached(head, body: Data(), age: 0, url: request.url, request: request), from: reader)
                answer.revalidated = true
                return answer
            }
            cache.count(\.misses)
            response = try await streamExchange(request, bufferSize: bufferSize, progress: progress)
        } else {
            cache.count(\.misses)
        }
        if response.redirects.isEmpty, method == .get,
           let (writer, _) = cache.writer(for: PocketResponse(status: response.status, reason: response.reason, headers: response.headers),
                                          request: request, defaults: configuration.defaultHeaders, requestTime: requestTime) {
            response.body.tee = writer
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

    /// The network, then the store when allowed.
    private func fetch(_ request: PocketRequest, cache: PocketResponseCache, progress: PocketProgressHandler?) async throws -> PocketResponse {
        let requestTime = cache.now()
        let response = try await exchange(request, progress: progress)
        guard response.redirects.isEmpty, request.method == .get,
              let (writer, stored) = cache.writer(for: response, request: request, defaults: configuration.defaultHeaders,
                                                  requestTime: requestTime) else { return response }
        if writer.append(stored.body) {
            writer.commit()
            cache.count(\.stores)
        }
        return response
    }

    /// A conditional request for a stale `entry`: a 304 refreshes its head
    /// and answers with its body; anything else replaces it.
    private func revalidate(_ request: PocketRequest, entry: CacheEntry, cache: PocketResponseCache,
                            progress: PocketProgressHandler?) async throws -> PocketResponse {
        var conditional = request
        if let etag = entry.head.headers["ETag"] { conditional.headers["If-None-Match"] = etag }
        if let date = entry.head.headers["Last-Modified"] { conditional.headers["If-Modified-Since"] = date }
        let requestTime = cache.now()
        let response = try await exchange(conditional, progress: progress)
        guard response.status == 304, response.redirects.isEmpty else {
            cache.count(\.misses)
            guard response.redirects.isEmpty, let (writer, stored) = cache.writer(for: response, request: request,
                                                                                     defaults: configuration.defaultHeaders,
                                                                                     requestTime: requestTime) else { return response }
            if writer.append(stored.body) {
                writer.commit()
                cache.count(\.stores)
            }
            return response
        }
        let head = refreshed(entry.head, by: response.headers, requestTime: requestTime, cache: cache)
        guard let body = cache.store.body(of: entry) else {
            // The stored body went meanwhile (evicted or corrupt): ask again, plainly.
            cache.count(\.misses)
            return try await fetch(request, cache: cache, progress: progress)
        }
        cache.store.update(entry, head: head)
        cache.count(\.revalidations)
        var answer = Self.cached(head, body: body, age: 0, url: request.url, request: request)
        answer.revalidated = true
        answer.timings = response.timings
        return answer
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
