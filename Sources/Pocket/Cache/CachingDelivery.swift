#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response the cache step answers with, of either delivery it serves.
protocol CacheableResponse: ExchangedResponse {
    var redirects: [PocketRedirectHop] { get }
    var revalidated: Bool { get set }
}

extension PocketResponse: CacheableResponse {}
extension PocketStreamingResponse: CacheableResponse {}

/// A delivery the cache step serves: how a stored body is answered with,
/// and how a fetched one is stored.
protocol CachingDelivery: ResponseDelivery where Response: CacheableResponse {
    /// `entry`'s body under `head` as the caller gets it; nil when the
    /// store no longer has the body (evicted or corrupt).
    func stored(_ entry: CacheEntry, head: CachedHead, age: Double, request: PocketRequest,
                cache: PocketResponseCache) -> Response?
    /// Stores `response`'s body (`stored`: the response as `willCache`
    /// left it) through `writer`; whether it was kept.
    func store(_ response: inout Response, stored: PocketResponse, into writer: any CacheWriter) -> Bool
    /// What a 304 adds to the stored answer.
    func revalidated(_ answer: inout Response, by response: Response)
}

extension CollectDelivery: CachingDelivery {
    func stored(_ entry: CacheEntry, head: CachedHead, age: Double, request: PocketRequest,
                cache: PocketResponseCache) -> PocketResponse? {
        guard let body = cache.store.body(of: entry) else { return nil }
        return PocketClient.cached(head, body: request.method == .head ? Data() : body, age: age, url: request.url, request: request)
    }

    func store(_ response: inout PocketResponse, stored: PocketResponse, into writer: any CacheWriter) -> Bool {
        guard writer.append(stored.body) else { return false }
        writer.commit()
        return true
    }

    func revalidated(_ answer: inout PocketResponse, by response: PocketResponse) { answer.timings = response.timings }
}

extension StreamDelivery: CachingDelivery {
    /// A stored body is read from the store in pieces of at most
    /// `cacheChunkSize` as the caller reads.
    func stored(_ entry: CacheEntry, head: CachedHead, age: Double, request: PocketRequest,
                cache: PocketResponseCache) -> PocketStreamingResponse? {
        let response = PocketClient.cached(head, body: Data(), age: age, url: request.url, request: request)
        if request.method == .head { return PocketClient.streamed(response) }
        guard let reader = cache.store.bodyReader(of: entry, chunkSize: PocketClient.cacheChunkSize) else { return nil }
        return PocketClient.streamed(response, from: reader)
    }

    /// The body is stored as the caller reads it (kept only if read to its end).
    func store(_ response: inout PocketStreamingResponse, stored: PocketResponse, into writer: any CacheWriter) -> Bool {
        response.body.tee = writer
        return true
    }

    func revalidated(_ answer: inout PocketStreamingResponse, by response: PocketStreamingResponse) {}
}
