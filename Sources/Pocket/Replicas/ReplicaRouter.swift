import Synchronization

/// The client's replica sets by name, and the breakers of plain origins
/// (`Configuration.originEjection`): what the hop consults to route a
/// request. Made once per client; nil when neither is configured, so a
/// client without them pays one nil check per hop.
final class ReplicaRouter: Sendable {
    /// The sets by their lower-case name.
    let sets: [String: PocketReplicaSet]
    /// The sets when `named` compares an ASCII host with each name (a
    /// few, all named in ASCII), else nil.
    private let scanned: [PocketReplicaSet]?
    /// The breaker settings of plain origins, or nil.
    let originEjection: PocketOutlierEjection?
    /// One single-replica set per origin seen, made on first use.
    private let origins = Lock<[OriginKey: PocketReplicaSet]>([:])

    /// An origin as the breakers key it (no string is made per request).
    private struct OriginKey: Hashable {
        var https: Bool
        var host: String
        var port: UInt16
    }
    /// The most origins that get a breaker (a client that talks to more
    /// sends to the rest unguarded, so memory stays bounded).
    static let maxOrigins = 1024

    init?(_ configuration: PocketClient.Configuration) {
        guard !configuration.replicaSets.isEmpty || configuration.originEjection != nil else { return nil }
        var sets: [String: PocketReplicaSet] = [:]
        for set in configuration.replicaSets { sets[set.name] = sets[set.name] ?? set }
        self.sets = sets
        scanned = sets.count <= 8 && sets.keys.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } } ? Array(sets.values) : nil
        originEjection = configuration.originEjection
    }

    /// The set a hop of `request` goes through: the set named by its
    /// host, else its origin's breaker (when configured), else nil. (The
    /// target's fields are read one by one: a copy of the whole `Target`
    /// out of the request's storage would retain each of its strings.)
    func set(for request: PocketRequest) -> PocketReplicaSet? {
        set(https: request.target.https, host: request.target.host, port: request.target.port,
            unix: request.target.unixPath != nil)
    }

    /// `set(for:)` of a request to `target`.
    func set(for target: Target) -> PocketReplicaSet? {
        set(https: target.https, host: target.host, port: target.port, unix: target.unixPath != nil)
    }

    private func set(https: Bool, host: String, port: UInt16, unix: Bool) -> PocketReplicaSet? {
        if unix { return nil }
        if !sets.isEmpty, let set = named(host) { return set }
        guard let originEjection else { return nil }
        let key = OriginKey(https: https, host: host, port: port)
        return origins.withLock { origins in
            if let set = origins[key] { return set }
            guard origins.count < Self.maxOrigins else { return nil }
            let origin = PocketReplicaEndpoint(scheme: https ? "https" : "http", host: host, port: port)
            let set = PocketReplicaSet(name: origin.origin, balancing: .roundRobin, ejection: originEjection, moves: false)
            set.update([origin])
            origins[key] = set
            return set
        }
    }

    /// Whether `target` names a replica set (its requests then keep the
    /// replicas they used: `ReplicaHistory`).
    func namesSet(_ target: Target) -> Bool {
        !sets.isEmpty && target.unixPath == nil && named(target.host) != nil
    }

    /// The set named `host`, compared without case. When the names are
    /// few and ASCII (DNS names), an ASCII host is compared with each name
    /// byte by byte, A-Z folded to a-z: no lower-case copy, no hash. Any
    /// other host is looked up by its Unicode lower case.
    private func named(_ host: String) -> PocketReplicaSet? {
        if let scanned, let set = Self.scan(scanned, for: host) { return set }
        return sets[host.lowercased()]
    }

    /// The set of `sets` named `host` when `host` is ASCII (`.some(nil)`:
    /// none is); nil when `host` is not ASCII.
    private static func scan(_ sets: [PocketReplicaSet], for host: String) -> PocketReplicaSet?? {
        // The host as written is usually the name itself: for a name of
        // up to 15 bytes (kept inline) `==` compares two words.
        for set in sets where host == set.name { return set }
        for set in sets {
            guard let equal = asciiFoldedEqual(host, set.name) else { return nil }
            if equal { return set }
        }
        return .some(nil)
    }

    /// Whether ASCII `host` equals `name` (lower case) with A-Z folded to
    /// a-z; nil when `host` has a byte outside ASCII. Reads both as
    /// contiguous UTF-8: a `UTF8View`'s iterator is a call per byte.
    static func asciiFoldedEqual(_ host: String, _ name: String) -> Bool? {
        var host = host, name = name
        return host.withUTF8 { h in name.withUTF8 { n in asciiFoldedEqual(h, n) } }
    }

    private static func asciiFoldedEqual(_ host: UnsafeBufferPointer<UInt8>, _ name: UnsafeBufferPointer<UInt8>) -> Bool? {
        var equal = host.count == name.count
        for i in host.indices {
            let byte = host[i]
            if byte >= 0x80 { return nil }
            if equal, (byte &- 0x41 < 26 ? byte | 0x20 : byte) != name[i] { equal = false }
        }
        return equal
    }

    /// Whether an error that ended a hop counts against the replica: a
    /// transport failure or a timeout does; a cancelled request, or one
    /// that could not be sent for reasons of its own (its URL, its body,
    /// the client shut down), does not.
    static func countsAgainstReplica(_ error: any Error) -> Bool? {
        guard let error = error as? PocketError else { return nil }
        switch error.code {
        case .cancelled, .shutdown, .invalidURL, .unsupportedScheme, .bodyNotReplayable, .requestBodyStreamFailed,
             .fileReadFailed, .requestBodyLengthMismatch, .circuitOpen, .noReplicas, .invalidArgument, .invalidHeaderName,
             .invalidHeaderValue, .invalidMethod, .invalidTarget, .requestHeadTooLarge, .tlsConfiguration:
            return nil
        default:
            return true
        }
    }
}

/// The replicas one request has been sent to, so that its next attempt (a
/// retry) or a parallel one (a hedge) prefers a replica it has not used
/// yet: their places in the set's list (the first 48), as bits, with the
/// list's generation, in one atomic word (no array, no lock). Made by the
/// request path for a request to a set's name that may be sent more than
/// once (it goes through the middleware chain: `executeAdapted`), and
/// carried to each hop by its delivery (`ResponseDelivery.history`), the
/// hedges' included. A hop with none has no preference.
final class ReplicaHistory: Sendable {
    /// Bits 0-47: the places used; bits 48-63: the list's generation (mod 2^16).
    private let word = Atomic<UInt64>(0)
    private static let places: UInt64 = (1 << 48) - 1

    init() {}

    /// The places used in list `generation`: none when the list changed since.
    func used(generation: Int) -> UInt64 {
        let w = word.load(ordering: .relaxed)
        return w >> 48 == UInt64(truncatingIfNeeded: generation) & 0xFFFF ? w & Self.places : 0
    }

    /// Adds place `index` of list `generation` (a newer list starts afresh).
    func add(index: Int, generation: Int) {
        let tag = (UInt64(truncatingIfNeeded: generation) & 0xFFFF) << 48
        var current = word.load(ordering: .relaxed)
        while true {
            let kept = current & ~Self.places == tag ? current & Self.places : 0
            let (done, seen) = word.compareExchange(expected: current, desired: tag | Self.adding(index, to: kept),
                                                    ordering: .relaxed)
            if done { return }
            current = seen
        }
    }

    /// Whether place `index` is in `used`.
    @inline(__always)
    static func contains(_ used: UInt64, _ index: Int) -> Bool {
        index < 48 && used & (1 << UInt64(index)) != 0
    }

    /// `used` with place `index` (beyond the 48th, not remembered).
    static func adding(_ index: Int, to used: UInt64) -> UInt64 {
        index < 48 ? used | (1 << UInt64(index)) : used
    }
}
