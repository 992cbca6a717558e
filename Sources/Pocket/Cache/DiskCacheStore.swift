#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One file per variant: `magic | body | head JSON | trailer`, the trailer
/// holding the lengths and checksums, so a body is written as it arrives
/// (its length is known only at the end) and a short or altered file is
/// recognised and removed. Files are written under a temporary name and
/// renamed into place; the index in memory is rebuilt from the directory at start.
final class DiskCacheStore: CacheStore {
    static let magic = Array("PKCACHE1".utf8)
    static let trailerMagic = Array("PKCEND01".utf8)
    /// headLength (4) | bodyLength (8) | bodyChecksum (8) | headChecksum (8) | trailerMagic (8).
    static let trailerSize = 36
    static let maxHeadBytes = 1 << 20

    struct Item {
        var head: CachedHead
        var file: String
        var size: Int
        var tick: UInt64
    }

    struct State {
        var items: [String: [Item]] = [:]
        var bytes = 0
        var tick: UInt64 = 0
    }

    let directory: URL
    let capacity: Int
    let maxEntryBytes: Int
    let state = Lock(State())

    init(directory: URL, capacity: Int, maxEntryBytes: Int) throws {
        self.directory = directory
        self.capacity = capacity
        self.maxEntryBytes = maxEntryBytes
        let path = directory.path(percentEncoded: false)
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw PocketError(.fileSystem, "cannot create the cache directory \(path): \(String(cString: strerror(errno)))", systemError: errno)
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else {
            throw PocketError(.fileSystem, "cannot read the cache directory \(path)")
        }
        // Oldest first, so the ticks keep the last-use order (mtime) across a restart.
        var found: [(Item, Double)] = []
        for name in names {
            let file = "\(path)/\(name)"
            if name.hasPrefix(".tmp-") {
                unlink(file) // a write cut short by a crash
                continue
            }
            guard name.hasSuffix(".pkc") else { continue }
            guard let (head, size) = Self.readHead(file) else {
                unlink(file)
                continue
            }
            var st = stat()
            let mtime = stat(file, &st) == 0 ? Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9 : 0
            found.append((Item(head: head, file: name, size: size, tick: 0), mtime))
        }
        state.withLock { s in
            for (item, _) in found.sorted(by: { $0.1 < $1.1 }) {
                s.tick += 1
                var item = item
                item.tick = s.tick
                s.items[item.head.key, default: []].append(item)
                s.bytes += item.size
            }
        }
        let victims = state.withLock { Self.evict(&$0, capacity: capacity) }
        for file in victims { unlink("\(path)/\(file)") }
    }

    var byteCount: Int { state.withLock { $0.bytes } }

    func path(_ file: String) -> String { directory.appending(path: file).path(percentEncoded: false) }

    func entries(for key: String) -> [CacheEntry] {
        state.withLock { s in (s.items[key] ?? []).sorted { $0.tick > $1.tick }.map { CacheEntry(head: $0.head, id: $0.file) } }
    }

    func body(of entry: CacheEntry) -> Data? {
        let file = path(entry.id)
        guard let data = Self.readBody(file, head: entry.head) else {
            // Corrupt, or gone from under the index: out of both.
            drop(entry)
            return nil
        }
        used(entry, file: file)
        return data
    }

    /// `entry` was just read: the most recently used, in the index and (its
    /// file's time) for the order after a restart.
    private func used(_ entry: CacheEntry, file: String) {
        state.withLock { s in
            guard let i = s.items[entry.head.key]?.firstIndex(where: { $0.file == entry.id }) else { return }
            s.tick += 1
            s.items[entry.head.key]![i].tick = s.tick
        }
        utimes(file, nil)
    }

    func bodyReader(of entry: CacheEntry, chunkSize: Int) -> (any CacheBodyReader)? {
        let file = path(entry.id)
        guard let reader = FileBodyReader(file, head: entry.head, chunkSize: chunkSize) else {
            drop(entry)
            return nil
        }
        used(entry, file: file)
        return reader
    }

    /// A cache file's body, checked whole against its trailer when opened
    /// (read in pieces, so memory stays at one piece), then read again piece
    /// by piece from the same descriptor: a file replaced meanwhile (renamed
    /// over) does not change what is read; one altered in place is caught by
    /// the checksum at the end.
    final class FileBodyReader: CacheBodyReader, @unchecked Sendable {
        // Invariant: used by one reader at a time (the stream it feeds).
        let fd: Int32
        let length: Int
        let checksum: UInt64
        let chunkSize: Int
        let file: String
        var offset = 0
        var sum = FNV1a()

        init?(_ file: String, head: CachedHead, chunkSize: Int) {
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            var st = stat()
            let size = fstat(fd, &st) == 0 ? Int(st.st_size) : -1
            guard size >= magic.count + head.bodyLength + trailerSize,
                  let trailer = pread(fd, count: trailerSize, at: size - trailerSize), Array(trailer.suffix(8)) == trailerMagic,
                  Int(truncatingIfNeeded: load(trailer[4..<12], as: UInt64.self)) == head.bodyLength else {
                close(fd)
                return nil
            }
            self.fd = fd
            self.length = head.bodyLength
            self.checksum = load(trailer[12..<20], as: UInt64.self)
            self.chunkSize = max(1, chunkSize)
            self.file = file
            var whole = FNV1a()
            var at = 0
            while at < length {
                let n = min(self.chunkSize, length - at)
                guard let piece = pread(fd, count: n, at: magic.count + at) else { return nil }
                piece.withUnsafeBytes { whole.update($0) }
                at += n
            }
            guard whole.value == checksum else { return nil }
        }

        deinit { close(fd) }

        func next() throws -> Data? {
            guard offset < length else { return nil }
            let n = min(chunkSize, length - offset)
            guard let piece = pread(fd, count: n, at: magic.count + offset) else {
                throw PocketError(.fileReadFailed, "the cached body in \(file) could not be read at byte \(offset)")
            }
            piece.withUnsafeBytes { sum.update($0) }
            offset += n
            if offset == length, sum.value != checksum {
                throw PocketError(.fileReadFailed, "the cached body in \(file) changed while it was read")
            }
            return Data(piece)
        }
    }

    /// Removes a corrupt or vanished entry from the index and the disk.
    func drop(_ entry: CacheEntry) {
        state.withLock { s in
            guard let i = s.items[entry.head.key]?.firstIndex(where: { $0.file == entry.id }) else { return }
            s.bytes -= s.items[entry.head.key]![i].size
            s.items[entry.head.key]!.remove(at: i)
            if s.items[entry.head.key]!.isEmpty { s.items[entry.head.key] = nil }
        }
        unlink(path(entry.id))
    }

    func writer(for head: CachedHead, replacing: CacheEntry?) -> (any CacheWriter)? {
        guard head.bodyLength <= maxEntryBytes else { return nil }
        let name = String(UInt64.random(in: 0...UInt64.max), radix: 16) + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let temp = path(".tmp-\(name)")
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        let writer = Writer(store: self, fd: fd, temp: temp, file: "\(name).pkc", head: head, replacing: replacing?.id)
        guard writer.write(Self.magic) else {
            writer.abandon()
            return nil
        }
        return writer
    }

    /// Puts a complete file in place and in the index; evicts past the cap.
    func install(_ head: CachedHead, file: String, size: Int, replacing: String?) {
        var unlinked: [String] = []
        state.withLock { s in
            s.tick += 1
            var list = s.items[head.key] ?? []
            list.removeAll { item in
                let drop = item.file == replacing || item.head.varying == head.varying
                if drop {
                    s.bytes -= item.size
                    unlinked.append(item.file)
                }
                return drop
            }
            list.append(Item(head: head, file: file, size: size, tick: s.tick))
            s.items[head.key] = list
            s.bytes += size
            unlinked += Self.evict(&s, capacity: capacity)
        }
        for file in unlinked { unlink(path(file)) }
    }

    /// Removes least recently used items from the index until the cap
    /// holds; returns their files, to unlink outside the lock.
    static func evict(_ s: inout State, capacity: Int) -> [String] {
        var victims: [String] = []
        while s.bytes > capacity {
            var oldest: (String, Int, UInt64)?
            for (key, list) in s.items {
                for (i, item) in list.enumerated() where oldest == nil || item.tick < oldest!.2 { oldest = (key, i, item.tick) }
            }
            guard let (key, i, _) = oldest else { break }
            s.bytes -= s.items[key]![i].size
            victims.append(s.items[key]![i].file)
            s.items[key]!.remove(at: i)
            if s.items[key]!.isEmpty { s.items[key] = nil }
        }
        return victims
    }

    /// A 304 refreshed the head: the body is copied into a new file with the
    /// new head (piece by piece), which replaces the old one.
    func update(_ entry: CacheEntry, head: CachedHead) {
        let source = path(entry.id)
        let fd = open(source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, Int(st.st_size) >= Self.trailerSize,
              let trailer = Self.pread(fd, count: Self.trailerSize, at: Int(st.st_size) - Self.trailerSize),
              let writer = writer(for: head, replacing: entry) as? Writer else { return }
        var remaining = entry.head.bodyLength
        var offset = off_t(Self.magic.count)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while remaining > 0 {
            let n = buffer.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, min($0.count, remaining), offset) }
            guard n > 0, writer.append(Data(buffer[..<n])) else {
                writer.abandon()
                return
            }
            remaining -= n
            offset += off_t(n)
        }
        // Only the body that was stored: a copy that changed meanwhile is dropped.
        guard writer.sum.value == Self.load(trailer[12..<20], as: UInt64.self) else {
            writer.abandon()
            drop(entry)
            return
        }
        writer.commit()
    }

    func remove(key: String) {
        let files = state.withLock { s -> [String] in
            let files = (s.items[key] ?? []).map(\.file)
            for item in s.items[key] ?? [] { s.bytes -= item.size }
            s.items[key] = nil
            return files
        }
        for file in files { unlink(path(file)) }
    }

    func removeAll() {
        let files = state.withLock { s -> [String] in
            let files = s.items.values.flatMap { $0.map(\.file) }
            s = State()
            return files
        }
        for file in files { unlink(path(file)) }
    }

    // MARK: the file format

    static func load<T: FixedWidthInteger>(_ bytes: ArraySlice<UInt8>, as: T.Type) -> T {
        var v: T = 0
        for (i, b) in bytes.prefix(MemoryLayout<T>.size).enumerated() { v |= T(b) << (8 * i) }
        return v
    }

    static func bytes<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
        (0..<MemoryLayout<T>.size).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
    }

    /// Reads exactly `count` bytes at `offset`, or nil.
    static func pread(_ fd: Int32, count: Int, at offset: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return out
    }

    /// The head of a cache file and the file's size, when its frame and
    /// head are intact (the body is checked when read).
    static func readHead(_ file: String) -> (CachedHead, Int)? {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let size = Int(st.st_size)
        guard size >= magic.count + trailerSize, let start = pread(fd, count: magic.count, at: 0), start == magic,
              let trailer = pread(fd, count: trailerSize, at: size - trailerSize), Array(trailer.suffix(8)) == trailerMagic
        else { return nil }
        let headLength = Int(load(trailer[0..<4], as: UInt32.self))
        let bodyLength = Int(truncatingIfNeeded: load(trailer[4..<12], as: UInt64.self))
        let headChecksum = load(trailer[20..<28], as: UInt64.self)
        guard bodyLength >= 0, bodyLength <= size, headLength <= maxHeadBytes, magic.count + bodyLength + headLength + trailerSize == size,
              let headBytes = pread(fd, count: headLength, at: magic.count + bodyLength) else { return nil }
        var sum = FNV1a()
        headBytes.withUnsafeBytes { sum.update($0) }
        guard sum.value == headChecksum, let head = try? JSONDecoder().decode(CachedHead.self, from: Data(headBytes)),
              head.bodyLength == bodyLength else { return nil }
        return (head, size)
    }

    /// The body of a cache file, checked against its trailer; nil when the
    /// file is gone, cut short or altered.
    static func readBody(_ file: String, head: CachedHead) -> Data? {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let size = Int(st.st_size)
        guard size >= magic.count + head.bodyLength + trailerSize,
              let trailer = pread(fd, count: trailerSize, at: size - trailerSize), Array(trailer.suffix(8)) == trailerMagic,
              Int(truncatingIfNeeded: load(trailer[4..<12], as: UInt64.self)) == head.bodyLength,
              let body = pread(fd, count: head.bodyLength, at: magic.count) else { return nil }
        var sum = FNV1a()
        body.withUnsafeBytes { sum.update($0) }
        guard sum.value == load(trailer[12..<20], as: UInt64.self) else { return nil }
        return Data(body)
    }

    /// Writes one file: the body as it comes, then the head and trailer.
    final class Writer: CacheWriter, @unchecked Sendable {
        // Invariant: used by one task at a time (the response it tees).
        let store: DiskCacheStore
        let fd: Int32
        let temp: String
        let file: String
        let head: CachedHead
        let replacing: String?
        var length = 0
        var sum = FNV1a()
        var done = false

        init(store: DiskCacheStore, fd: Int32, temp: String, file: String, head: CachedHead, replacing: String?) {
            self.store = store
            self.fd = fd
            self.temp = temp
            self.file = file
            self.head = head
            self.replacing = replacing
        }

        func write(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { write($0) }
        }

        func write(_ raw: UnsafeRawBufferPointer) -> Bool {
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }

        func append(_ chunk: Data) -> Bool {
            guard !done else { return false }
            guard length + chunk.count <= store.maxEntryBytes else {
                abandon()
                return false
            }
            let ok = chunk.withUnsafeBytes { raw in
                sum.update(raw)
                return write(raw)
            }
            guard ok else {
                abandon()
                return false
            }
            length += chunk.count
            return true
        }

        func commit() {
            guard !done else { return }
            done = true
            var head = self.head
            head.bodyLength = length
            guard let json = try? JSONEncoder().encode(head), json.count <= DiskCacheStore.maxHeadBytes else {
                close(fd)
                unlink(temp)
                return
            }
            var headSum = FNV1a()
            headSum.update(json)
            var trailer = DiskCacheStore.bytes(UInt32(json.count)) + DiskCacheStore.bytes(UInt64(length))
            trailer += DiskCacheStore.bytes(sum.value) + DiskCacheStore.bytes(headSum.value) + DiskCacheStore.trailerMagic
            let ok = json.withUnsafeBytes { write($0) } && write(trailer)
            close(fd)
            guard ok, rename(temp, store.path(file)) == 0 else {
                unlink(temp)
                return
            }
            store.install(head, file: file, size: DiskCacheStore.magic.count + length + json.count + DiskCacheStore.trailerSize,
                          replacing: replacing)
        }

        func abandon() {
            guard !done else { return }
            done = true
            close(fd)
            unlink(temp)
        }

        deinit { abandon() }
    }
}
