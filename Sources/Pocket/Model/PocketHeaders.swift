/// An ordered list of HTTP header fields with case-insensitive names.
///
/// Order and duplicates are preserved as sent or received (RFC 9110 §5.3):
/// `Set-Cookie` may appear several times, and the order of fields with the
/// same name is significant. Lookups ignore ASCII case.
public struct PocketHeaders: Sendable, Hashable, Codable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    public private(set) var fields: [Field]

    public init() { fields = [] }

    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Number of fields (duplicates count).
    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }

    /// The first value of `name`, or nil. Setting replaces every field of that
    /// name with one (at the position of the first), or removes them all for nil.
    public subscript(name: String) -> String? {
        get { fields.first { Self.equalNames($0.name, name) }?.value }
        set {
            guard let newValue else { remove(name); return }
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

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.equalNames($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { Self.equalNames($0.name, name) }
    }

    /// Appends a field, keeping any existing ones of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Reserves room for `n` fields.
    public mutating func reserveCapacity(_ n: Int) {
        fields.reserveCapacity(n)
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalNames($0.name, name) }
    }

    /// Adds `other`'s fields, replacing same-named ones of `self`.
    public mutating func merge(_ other: PocketHeaders) {
        for name in other.fields.map(\.name) where contains(name) { remove(name) }
        fields.append(contentsOf: other.fields)
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// ASCII case-insensitive comparison without allocating.
    static func equalNames(_ a: String, _ b: String) -> Bool {
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
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { equalNames($0.name, $1.name) && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields.count)
        for f in fields {
            hasher.combine(f.name.lowercased())
            hasher.combine(f.value)
        }
    }
}

extension PocketHeaders: Sequence {
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}
