#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A private HTTP cache (RFC 9111) for a client: opt in with
/// `PocketRequestHandling.cache`.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.cache = try PocketResponseCache(directory: URL(filePath: "/var/cache/svc/http"),
///                                                 capacity: 256 << 20)
/// let client = try PocketClient(configuration: config)
/// let catalogue = try await client.send(request)     // catalogue.fromCache, .revalidated
/// ```
///
/// What it follows: freshness from `Cache-Control: max-age` and `Expires`
/// (heuristic freshness is off unless `heuristicFreshness`); `no-store`
/// (never stored), `no-cache` (stored, always revalidated), `private`
/// (stored: this cache is private), `must-revalidate` (never served stale);
/// revalidation with `If-None-Match`/`If-Modified-Since`, a 304 refreshing
/// the stored header fields and answering with the stored body; `Vary`
/// (each variant stored apart; `Vary: *` never stored); invalidation of a
/// URI after an unsafe method on it (POST, PUT, DELETE, … that succeeded),
/// and of its `Location`/`Content-Location` on the same origin. Only GET
/// responses are stored (a HEAD is answered from a GET's entry); a response
/// to a request with `Authorization` only when it says `public`,
/// `must-revalidate` or `s-maxage`; a response reached through redirects is
/// not stored. A request with its own conditional or `Range` fields goes
/// to the network untouched.
///
/// Stores: in memory or on disk, each with a byte cap and least-recently-used
/// eviction. The disk store survives a restart (its index is rebuilt from
/// the directory); an entry that is cut short or altered is recognised by
/// its frame and checksums, removed, and treated as a miss — never served.
/// Safe for concurrent readers and writers. `send` (and everything built on
/// it) and `stream` use the cache; downloads to a file do not.
public final class PocketResponseCache: Sendable {
    /// What the cache did, counted since it was made.
    public struct Statistics: Sendable, Hashable {
        /// Answered from the cache with no request.
        public var hits = 0
        /// Answered from the cache after a 304.
        public var revalidations = 0
        /// Went to the network (nothing usable was stored).
        public var misses = 0
        /// Responses stored.
        public var stores = 0
        /// Entries removed after an unsafe method.
        public var invalidations = 0
        /// Stored entries found corrupt and removed.
        public var corruptEntries = 0
    }

    let store: any CacheStore
    /// Guess freshness from `Last-Modified` (10% of its age, at most a day)
    /// for responses without `max-age` or `Expires`. Off by default: a
    /// guess serves stale data that the server never said could be reused.
    public let heuristicFreshness: Bool
    let willCache: (@Sendable (PocketRequest, PocketResponse) -> PocketResponse?)?
    let counters = Lock(Statistics())
    /// The wall clock in seconds since 1970 (tests move it).
    let now: @Sendable () -> Double

    /// An in-memory cache of at most `memoryCapacity` bytes (32 MiB by
    /// default); one response's body may take at most `maxEntryBytes` (a
    /// quarter of the capacity by default; a larger one is not stored).
    ///
    /// `willCache` (AFNetworking's `setCacheResponseBlock:`) sees each
    /// response about to be stored and returns what to store (change its
    /// header fields or body) or nil to refuse it. A streamed response comes
    /// without its body (it is stored as it is read); a body changed there is ignored.
    public convenience init(memoryCapacity: Int = 32 << 20, maxEntryBytes: Int? = nil, heuristicFreshness: Bool = false,
                            willCache: (@Sendable (PocketRequest, PocketResponse) -> PocketResponse?)? = nil) {
        let capacity = max(0, memoryCapacity)
        self.init(store: MemoryCacheStore(capacity: capacity, maxEntryBytes: maxEntryBytes ?? capacity / 4),
                  heuristicFreshness: heuristicFreshness, willCache: willCache)
    }

    /// A disk cache in `directory` (made if missing; entries already there
    /// are used) of at most `capacity` bytes (256 MiB by default); see
    /// `init(memoryCapacity:)` for the rest. Bodies are written to disk as
    /// they arrive. Throws `.fileSystem` when the directory cannot be made or read.
    public convenience init(directory: URL, capacity: Int = 256 << 20, maxEntryBytes: Int? = nil, heuristicFreshness: Bool = false,
                            willCache: (@Sendable (PocketRequest, PocketResponse) -> PocketResponse?)? = nil) throws {
        let capacity = max(0, capacity)
        self.init(store: try DiskCacheStore(directory: directory, capacity: capacity, maxEntryBytes: maxEntryBytes ?? capacity / 4),
                  heuristicFreshness: heuristicFreshness, willCache: willCache)
    }

    init(store: any CacheStore, heuristicFreshness: Bool, willCache: (@Sendable (PocketRequest, PocketResponse) -> PocketResponse?)?,
         now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.store = store
        self.heuristicFreshness = heuristicFreshness
        self.willCache = willCache
        self.now = now
    }

    /// The counts so far.
    public var statistics: Statistics { counters.withLock { $0 } }

    /// Bytes held by the store.
    public var byteCount: Int { store.byteCount }

    /// Removes every stored response.
    public func removeAll() { store.removeAll() }

    /// Removes the responses stored for `url` (every variant).
    public func removeResponses(for url: URL) { store.remove(key: Self.key(url)) }

    func count(_ counter: WritableKeyPath<Statistics, Int>) { counters.withLock { $0[keyPath: counter] += 1 } }

    /// The primary key: the absolute URL without its fragment.
    static func key(_ url: URL) -> String {
        let s = url.absoluteString
        return s.firstIndex(of: "#").map { String(s[..<$0]) } ?? s
    }

    /// The request's values of the fields `Vary` names (the client's
    /// default header fields count, as they are sent).
    static func varying(_ response: PocketHeaders, request: PocketRequest, defaults: PocketHeaders) -> [String: String] {
        var out: [String: String] = [:]
        for field in response.values(for: "Vary") {
            for name in field.split(separator: ",") {
                let name = name.trimmingSpaces.lowercased()
                guard !name.isEmpty else { continue }
                let values = request.headers.contains(name) ? request.headers.values(for: name) : defaults.values(for: name)
                out[name] = values.map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
                    .joined(separator: ",")
            }
        }
        return out
    }

    /// The stored variant that matches `request`, most recently used first.
    func lookup(_ request: PocketRequest, defaults: PocketHeaders) -> CacheEntry? {
        store.entries(for: Self.key(request.url)).first { entry in
            Self.varying(entry.head.headers, request: request, defaults: defaults) == entry.head.varying
        }
    }

    /// A writer for `response`'s body when it may be stored, after the
    /// `willCache` hook; `head` is what is kept.
    func writer(for response: PocketResponse, request: PocketRequest, defaults: PocketHeaders,
                requestTime: Double) -> (any CacheWriter, PocketResponse)? {
        let directives = CacheDirectives(response.headers)
        guard CacheRules.refusal(request: request, requestDirectives: CacheDirectives(request.headers), response: response.head,
                                 directives: directives, heuristic: heuristicFreshness) == nil else { return nil }
        var candidate = response
        if let willCache {
            guard let changed = willCache(request, response) else { return nil }
            candidate = changed
        }
        let head = CachedHead(key: Self.key(request.url), status: candidate.status, reason: candidate.reason, headers: candidate.headers,
                              varying: Self.varying(candidate.headers, request: request, defaults: defaults),
                              requestTime: requestTime, responseTime: now(), bodyLength: candidate.body.count)
        guard let writer = store.writer(for: head, replacing: nil) else { return nil }
        return (writer, candidate)
    }

    /// Removes what an unsafe method on `request.url` made stale (RFC 9111 §4.4).
    func invalidate(after request: PocketRequest, response: PocketResponseHead) {
        var urls = [request.url]
        for name in ["Location", "Content-Location"] {
            if let value = response.headers[name], let url = URL(string: value, relativeTo: request.url)?.absoluteURL,
               PocketClient.sameOrigin(url, request.url) {
                urls.append(url)
            }
        }
        for url in urls where !store.entries(for: Self.key(url)).isEmpty {
            store.remove(key: Self.key(url))
            count(\.invalidations)
        }
    }
}

/// How one request uses the client's cache (`PocketRequest.cachePolicy`),
/// after `URLRequest.CachePolicy`.
public enum PocketCachePolicy: Sendable, Hashable {
    /// RFC 9111's rules (the default): a fresh stored response is used, a
    /// stale one revalidated.
    case useProtocol
    /// Always the network (the response is still stored when allowed).
    case reloadIgnoringCache
    /// A stored response even when stale (unless `no-cache` or
    /// `must-revalidate` forbid it), else the network.
    case returnCacheElseLoad
    /// A stored response as `returnCacheElseLoad` would use it, never the
    /// network (`only-if-cached`): a miss throws `.notCached`.
    case onlyIfCached
}

extension PocketError.Code {
    /// `PocketCachePolicy.onlyIfCached` found no stored response it may use
    /// (or the client has no cache). The message names the URL.
    public static let notCached = PocketError.Code("not_cached")
}
