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
            if !["OPTIONS", "TRACE"].contains(method.rawValue), (200..<400).contains(response.status) {
                cache.invalidate(after: request, response: response.head)
            }
            return response
        }
        let defaults = configuration.defaultHeaders
        let ownConditions = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"]
            .contains { request.headers.contains($0) }
        let requestDirectives = CacheDirectives(request.headers)
        guard !ownConditions else { return try await exchange(request, progress: progress) }

        if policy != .reloadIgnoringCache, !requestDirectives.has("no-store"), let entry = cache.lookup(request, defaults: defaults) {
            let now = cache.now()
            let directives = CacheDirectives(entry.head.headers)
            let lifetime = CacheRules.lifetime(entry.head.headers, directives: directives, status: entry.head.status,
                                               heuristic: cache.heuristicFreshness, responseTime: entry.head.responseTime)
            let age = CacheRules.age(entry.head.headers, requestTime: entry.head.requestTime, responseTime: entry.head.responseTime, now: now)
            var fresh = lifetime > age
            if let maxAge = requestDirectives.seconds("max-age"), age > maxAge { fresh = false }
            if let minFresh = requestDirectives.seconds("min-fresh"), lifetime - age < minFresh { fresh = false }
            var staleAllowed = policy == .returnCacheElseLoad || policy == .onlyIfCached
            if requestDirectives.has("max-stale") {
                staleAllowed = staleAllowed || requestDirectives.seconds("max-stale").map { age - lifetime <= $0 || requestDirectives.values["max-stale"]! == nil } ?? true
            }
            let mustValidate = directives.has("no-cache") || requestDirectives.has("no-cache")
            if !mustValidate, fresh || (staleAllowed && !directives.has("must-revalidate")) {
                if let body = cache.store.body(of: entry) {
                    cache.count(\.hits)
                    return Self.cached(entry.head, body: method == .head ? Data() : body, age: age, url: request.url, request: request)
                }
                cache.count(\.corruptEntries)
            } else if method == .get, policy != .onlyIfCached,
                      entry.head.headers.contains("ETag") || entry.head.headers.contains("Last-Modified") {
                return try await revalidate(request, entry: entry, cache: cache, progress: progress)
            }
        }
        if policy == .onlyIfCached { throw Self.notCached(request, "nothing usable is stored for it") }
        cache.count(\.misses)
        return try await fetch(request, cache: cache, progress: progress)
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
        // RFC 9111 §3.2: the 304's fields replace the stored ones, framing aside.
        var head = entry.head
        let framing: Set<String> = ["content-length", "transfer-encoding", "content-encoding", "content-range", "connection", "keep-alive"]
        for name in Set(response.headers.fields.map { $0.name.lowercased() }) where !framing.contains(name) {
            head.headers.remove(name)
            for value in response.headers.values(for: name) { head.headers.add(name: name, value: value) }
        }
        head.requestTime = requestTime
        head.responseTime = cache.now()
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
