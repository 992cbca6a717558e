/// An ordered list of HTTP header fields with case-insensitive names.
///
/// Order and duplicates are preserved as sent or received (RFC 9110 §5.3):
/// `Set-Cookie` may appear several times, and the order of fields with the
/// same name is significant. Lookups ignore ASCII case.
public struct PocketHeaders: Sendable, Hashable, Codable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Hashable, Codable {
        /// The field name as sent or received (its case kept; compared ignoring ASCII
        /// case).
        public var name: String
        /// The field value, without surrounding whitespace.
        public var value: String
        /// A field named `name` with `value`.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Where the fields live: a list (headers built in code), or, for a
    /// received response, one packed block the engine's bytes are copied
    /// into once (a single allocation, whatever the number of fields;
    /// values become `String`s only when read). A mutation turns a packed
    /// block into a list first.
    ///
    /// Two stored properties, not an enum of the two: an enum with two
    /// reference payloads keeps its case in the reference's spare high
    /// bits, and LeakSanitizer does not take a word with those bits set
    /// for a pointer, so it reported the packed block of a response still
    /// alive at exit as leaked.
    private var list: [Field]
    /// The received block; when set, it holds the fields and `list` is empty.
    private var packed: SendablePackedFields?

    /// The fields in order.
    public private(set) var fields: [Field] {
        get {
            if let packed { return packed.buffer.decoded() }
            return list
        }
        set { list = newValue; packed = nil }
    }

    /// No fields.
    public init() { list = [] }

    /// The fields of `pairs` (name, value), in order, duplicates kept.
    public init(_ pairs: [(String, String)]) {
        list = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// The fields of a literal, in order: `["Accept": "application/json", "X-Trace":
    /// "1"]` (a literal may repeat a name).
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    init(packed: PackedFields) {
        list = []
        self.packed = SendablePackedFields(buffer: packed)
    }

    /// Number of fields (duplicates count).
    public var count: Int {
        if let packed { return packed.buffer.count }
        return list.count
    }

    /// True when there are no fields.
    public var isEmpty: Bool { count == 0 }

    /// The first value of `name`, or nil. Setting replaces every field of that
    /// name with one (at the position of the first), or removes them all for nil.
    public subscript(name: String) -> String? {
        get {
            if let p = packed {
                guard let i = p.buffer.firstIndex(of: name) else { return nil }
                return p.buffer.value(at: i)
            }
            for i in list.indices where Self.equalNames(list[i].name, name) { return list[i].value }
            return nil
        }
        set {
            guard let newValue else { remove(name); return }
            editList { fields in
                if let i = fields.firstIndex(where: { Self.equalNames($0.name, name) }) {
                    fields[i].value = newValue
                    var j = i + 1
                    while j < fields.count {
                        if Self.equalNames(fields[j].name, name) { fields.remove(at: j) } else { j += 1 }
                    }
                } else {
                    fields.append(Field(name: name, value: newValue))
                }
            }
        }
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        if let p = packed {
            return (0..<p.buffer.count).filter { p.buffer.nameEquals(name, at: $0) }.map { p.buffer.value(at: $0) }
        }
        return list.filter { Self.equalNames($0.name, name) }.map(\.value)
    }

    /// True when a field is named `name` (ignoring ASCII case).
    public func contains(_ name: String) -> Bool {
        if let p = packed { return p.buffer.firstIndex(of: name) != nil }
        // By index: the list is read where it is (an iterator would hold a
        // reference of its own, a retain and a release per call).
        for i in list.indices where Self.equalNames(list[i].name, name) { return true }
        return false
    }

    /// The field at `i` (`0..<count`), read where it is (`fields` hands out
    /// a list of its own: for a packed block a new array, for a list a
    /// reference to it).
    @inline(__always)
    func field(at i: Int) -> Field {
        if let p = packed { return Field(name: p.buffer.name(at: i), value: p.buffer.value(at: i)) }
        return list[i]
    }

    /// Appends a field, keeping any existing ones of the same name.
    public mutating func add(name: String, value: String) {
        editList { $0.append(Field(name: name, value: value)) }
    }

    /// Reserves room for `n` fields.
    public mutating func reserveCapacity(_ n: Int) {
        if packed == nil { list.reserveCapacity(n) }
    }

    /// Removes every field named `name` (ignoring ASCII case); nothing when there is
    /// none.
    public mutating func remove(_ name: String) {
        guard contains(name) else { return }
        editList { $0.removeAll { Self.equalNames($0.name, name) } }
    }

    /// Adds `other`'s fields, replacing same-named ones of `self`.
    public mutating func merge(_ other: PocketHeaders) {
        let added = other.fields
        editList { fields in
            fields.removeAll { f in added.contains { Self.equalNames($0.name, f.name) } }
            fields.append(contentsOf: added)
        }
    }

    /// Changes the fields as a list, in place: a packed block becomes a list
    /// first, and the list is changed where it is stored, so it stays
    /// uniquely referenced (no copy of the array per change).
    private mutating func editList(_ body: (inout [Field]) -> Void) {
        if let p = packed.take() { list = p.buffer.decoded() }
        body(&list)
    }

    /// The fields as `Name: value` lines, in order.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// ASCII case-insensitive comparison without allocating.
    static func equalNames(_ a: String, _ b: String) -> Bool {
        // Most names differ in length, which native strings know at once.
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a.utf8.makeIterator(), b = b.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case let (x?, y?):
                if x == y { continue }
                if x | 0x20 != y | 0x20 { return false }
                let l = x | 0x20
                if l < UInt8(ascii: "a") || l > UInt8(ascii: "z") { return false }
            default: return false
            }
        }
    }

    /// Equality ignores name case but keeps order.
    public static func == (lhs: PocketHeaders, rhs: PocketHeaders) -> Bool {
        let l = lhs.fields, r = rhs.fields
        return l.count == r.count && zip(l, r).allSatisfy { equalNames($0.name, $1.name) && $0.value == $1.value }
    }

    /// Hashes the fields in order, names ignoring ASCII case (as `==` compares them).
    public func hash(into hasher: inout Hasher) {
        let fields = self.fields
        hasher.combine(fields.count)
        for f in fields {
            hasher.combine(f.name.lowercased())
            hasher.combine(f.value)
        }
    }
}

extension PocketHeaders: Sequence {
    /// The fields in order, duplicates included.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}

extension PocketHeaders {
    private enum CodingKeys: String, CodingKey { case fields }

    /// Decodes the form `encode(to:)` writes.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        list = try c.decode([Field].self, forKey: .fields)
    }

    /// Encodes the fields in order as `{"fields": [{"name": …, "value": …}]}`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(fields, forKey: .fields)
    }
}

/// Received header fields packed in one allocation: an index of
/// (name offset, name length, value offset, value length) per field, then
/// the bytes. Immutable once built, so it is shared freely.
final class PackedFields: ManagedBuffer<PackedFields.Counts, UInt32> {
    // Invariant: written only by `make`, before the object is published.
    struct Counts {
        var fields: Int
        var bytes: Int
    }

    /// Packs `count` fields whose name and value bytes `field(i)` gives
    /// (valid during the call), `totalBytes` in all.
    static func make(count: Int, totalBytes: Int,
                     field: (Int) -> (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)) -> PackedFields {
        let words = count * 4 + (totalBytes + 3) / 4
        let buffer = PackedFields.create(minimumCapacity: max(words, 1)) { _ in Counts(fields: count, bytes: totalBytes) }
        let packed = unsafeDowncast(buffer, to: PackedFields.self)
        packed.withUnsafeMutablePointerToElements { index in
            let bytes = UnsafeMutableRawPointer(index + count * 4)
            var offset = 0
            for i in 0..<count {
                let (name, value) = field(i)
                index[i * 4] = UInt32(offset)
                index[i * 4 + 1] = UInt32(name.count)
                if name.count > 0 { (bytes + offset).copyMemory(from: name.baseAddress!, byteCount: name.count) }
                offset += name.count
                index[i * 4 + 2] = UInt32(offset)
                index[i * 4 + 3] = UInt32(value.count)
                if value.count > 0 { (bytes + offset).copyMemory(from: value.baseAddress!, byteCount: value.count) }
                offset += value.count
            }
        }
        return packed
    }

    var count: Int { header.fields }

    private func bytes(_ i: Int, _ part: Int) -> UnsafeRawBufferPointer {
        withUnsafeMutablePointerToElements { index in
            let base = UnsafeRawPointer(index + header.fields * 4)
            return UnsafeRawBufferPointer(start: base + Int(index[i * 4 + part]), count: Int(index[i * 4 + part + 1]))
        }
    }

    func name(at i: Int) -> String { String(decoding: bytes(i, 0), as: UTF8.self) }
    func value(at i: Int) -> String { String(decoding: bytes(i, 2), as: UTF8.self) }

    /// Whether field `i`'s name is `name`, ignoring ASCII case (no allocation).
    func nameEquals(_ name: String, at i: Int) -> Bool {
        let stored = bytes(i, 0)
        var name = name
        return name.withUTF8 { wanted in
            guard wanted.count == stored.count else { return false }
            for k in 0..<wanted.count {
                let x = wanted[k], y = stored[k]
                if x == y { continue }
                let l = x | 0x20
                guard l == y | 0x20, l >= UInt8(ascii: "a"), l <= UInt8(ascii: "z") else { return false }
            }
            return true
        }
    }

    func firstIndex(of name: String) -> Int? {
        // A loop, not `first(where:)`: its closure held a reference to this
        // buffer (a retain and a release per lookup).
        for i in 0..<count where nameEquals(name, at: i) { return i }
        return nil
    }

    func decoded() -> [PocketHeaders.Field] {
        (0..<count).map { PocketHeaders.Field(name: name(at: $0), value: value(at: $0)) }
    }
}

/// A `PackedFields` as a `Sendable` value (ManagedBuffer opts out of
/// Sendable). Invariant: the buffer is immutable once `make` returns.
struct SendablePackedFields: @unchecked Sendable {
    let buffer: PackedFields
}
