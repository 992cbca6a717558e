#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What is kept of a stored response besides its body.
struct CachedHead: Codable, Sendable {
    /// The absolute URL without fragment: the primary cache key (RFC 9111 §2).
    var key: String
    var status: Int
    var reason: String
    var headers: PocketHeaders
    /// The request's values of the fields `Vary` names (lowercased name →
    /// value, "" when absent): the secondary key (RFC 9111 §4.1).
    var varying: [String: String]
    /// When the request was sent and the response received (seconds since 1970).
    var requestTime: Double
    var responseTime: Double
    var bodyLength: Int
}

/// An entry as a store lists it: the head, and where its body is.
struct CacheEntry: Sendable {
    var head: CachedHead
    /// The store's handle on the body (an index in memory, a file name on disk).
    var id: String
}

/// FNV-1a 64: a cheap checksum that tells a flipped or missing byte (not a
/// defence against tampering; the cache directory is the process's own).
struct FNV1a: Sendable {
    var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var h = value
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        value = h
    }

    mutating func update(_ data: Data) { data.withUnsafeBytes { update($0) } }
}

/// A place for cached responses: in memory or on disk, each with a byte
/// cap and least-recently-used eviction. Safe for concurrent readers and writers.
protocol CacheStore: Sendable {
    /// The variants stored under `key`, most recently used first.
    func entries(for key: String) -> [CacheEntry]
    /// The body of `entry`; nil when it is gone or corrupt (a corrupt entry is removed).
    func body(of entry: CacheEntry) -> Data?
    /// The body of `entry` in pieces of at most `chunkSize` bytes, read as
    /// they are asked for (a disk entry is checked whole first, then read
    /// again piece by piece, so memory stays at one piece); nil when it is
    /// gone or corrupt (a corrupt entry is removed).
    func bodyReader(of entry: CacheEntry, chunkSize: Int) -> (any CacheBodyReader)?
    /// A writer for a new variant (replacing `replacing`, if any), or nil
    /// when the store cannot take it.
    func writer(for head: CachedHead, replacing: CacheEntry?) -> (any CacheWriter)?
    /// Replaces `entry`'s head (a 304 refreshed it), keeping its body.
    func update(_ entry: CacheEntry, head: CachedHead)
    func remove(key: String)
    func removeAll()
    /// Bytes held (bodies and heads).
    var byteCount: Int { get }
}

/// Takes a body piece by piece; `commit` stores it, `abandon` drops it.
protocol CacheWriter: AnyObject, Sendable {
    /// False once the body passed the store's limit (the writer is then abandoned).
    func append(_ chunk: Data) -> Bool
    func commit()
    func abandon()
}

/// A stored body handed out piece by piece (`PocketClient.stream` on a hit).
protocol CacheBodyReader: AnyObject, Sendable {
    /// The next piece, nil at the end; throws when the stored bytes changed
    /// or could not be read after they were checked.
    func next() throws -> Data?
}

/// A body in memory, handed out in pieces.
final class DataBodyReader: CacheBodyReader, @unchecked Sendable {
    // Invariant: used by one reader at a time (the stream it feeds).
    let data: Data
    let chunkSize: Int
    var offset = 0

    init(_ data: Data, chunkSize: Int) {
        self.data = data
        self.chunkSize = max(1, chunkSize)
    }

    func next() throws -> Data? {
        guard offset < data.count else { return nil }
        let end = min(data.count, offset + chunkSize)
        let start = data.startIndex + offset
        defer { offset = end }
        return Data(data[start..<(data.startIndex + end)])
    }
}
