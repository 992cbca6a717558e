#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The in-memory store: bodies in `Data`, LRU by a use counter.
final class MemoryCacheStore: CacheStore {
    struct Item {
        var head: CachedHead
        var body: Data
        var tick: UInt64
        var id: String
        var cost: Int { body.count + 512 }
    }

    struct State {
        var items: [String: [Item]] = [:]
        var bytes = 0
        var tick: UInt64 = 0
        var nextID: UInt64 = 0
    }

    let capacity: Int
    let maxEntryBytes: Int
    let state = Lock(State())

    init(capacity: Int, maxEntryBytes: Int) {
        self.capacity = capacity
        self.maxEntryBytes = maxEntryBytes
    }

    var byteCount: Int { state.withLock { $0.bytes } }

    func entries(for key: String) -> [CacheEntry] {
        state.withLock { s in (s.items[key] ?? []).sorted { $0.tick > $1.tick }.map { CacheEntry(head: $0.head, id: $0.id) } }
    }

    func body(of entry: CacheEntry) -> Data? {
        state.withLock { s in
            guard let i = s.items[entry.head.key]?.firstIndex(where: { $0.id == entry.id }) else { return nil }
            s.tick += 1
            s.items[entry.head.key]![i].tick = s.tick
            return s.items[entry.head.key]![i].body
        }
    }

    func bodyReader(of entry: CacheEntry, chunkSize: Int) -> (any CacheBodyReader)? {
        body(of: entry).map { DataBodyReader($0, chunkSize: chunkSize) }
    }

    func writer(for head: CachedHead, replacing: CacheEntry?) -> (any CacheWriter)? {
        guard head.bodyLength <= maxEntryBytes else { return nil }
        return Writer(store: self, head: head, replacing: replacing?.id)
    }

    func insert(_ head: CachedHead, body: Data, replacing: String?) {
        state.withLock { s in
            s.tick += 1
            s.nextID += 1
            var list = s.items[head.key] ?? []
            list.removeAll { item in
                let drop = item.id == replacing || item.head.varying == head.varying
                if drop { s.bytes -= item.cost }
                return drop
            }
            let item = Item(head: head, body: body, tick: s.tick, id: String(s.nextID))
            list.append(item)
            s.items[head.key] = list
            s.bytes += item.cost
            Self.evict(&s, capacity: capacity)
        }
    }

    /// Drops least recently used items until the cap holds.
    static func evict(_ s: inout State, capacity: Int) {
        while s.bytes > capacity {
            var oldest: (String, Int, UInt64)?
            for (key, list) in s.items {
                for (i, item) in list.enumerated() where oldest == nil || item.tick < oldest!.2 { oldest = (key, i, item.tick) }
            }
            guard let (key, i, _) = oldest else { return }
            s.bytes -= s.items[key]![i].cost
            s.items[key]!.remove(at: i)
            if s.items[key]!.isEmpty { s.items[key] = nil }
        }
    }

    func update(_ entry: CacheEntry, head: CachedHead) {
        state.withLock { s in
            guard let i = s.items[entry.head.key]?.firstIndex(where: { $0.id == entry.id }) else { return }
            s.tick += 1
            s.items[entry.head.key]![i].head = head
            s.items[entry.head.key]![i].tick = s.tick
        }
    }

    func remove(key: String) {
        state.withLock { s in
            for item in s.items[key] ?? [] { s.bytes -= item.cost }
            s.items[key] = nil
        }
    }

    func removeAll() { state.withLock { $0 = State() } }

    /// Collects the body in memory (it is where the body goes), up to the entry limit.
    final class Writer: CacheWriter, @unchecked Sendable {
        // Invariant: used by one task at a time (the response it tees), as its owner hands it on.
        let store: MemoryCacheStore
        let head: CachedHead
        let replacing: String?
        var body = Data()
        var done = false

        init(store: MemoryCacheStore, head: CachedHead, replacing: String?) {
            self.store = store
            self.head = head
            self.replacing = replacing
        }

        func append(_ chunk: Data) -> Bool {
            guard !done else { return false }
            guard body.count + chunk.count <= store.maxEntryBytes else {
                abandon()
                return false
            }
            body.append(chunk)
            return true
        }

        func commit() {
            guard !done else { return }
            done = true
            var head = self.head
            head.bodyLength = body.count
            store.insert(head, body: body, replacing: replacing)
        }

        func abandon() {
            done = true
            body = Data()
        }
    }
}
