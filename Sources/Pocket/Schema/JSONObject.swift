/// A JSON dictionary that keeps its keys in the order they came.
///
/// Lookups scan the keys (fast for the dozens of keys API objects have);
/// objects with more than `indexThreshold` keys also keep a hash index.
/// The parser rejects a key given twice; built by hand, a repeated key
/// keeps its first place and its last value.
public struct PocketJSONObject: Sendable, Equatable {
    /// The members in order.
    public private(set) var members: [(key: String, value: PocketJSONValue)]
    private var index: [String: Int]?

    static let indexThreshold = 24

    /// An empty dictionary.
    public init() { members = [] }

    /// A dictionary of these members, in this order.
    public init(_ members: [(String, PocketJSONValue)]) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for (key, value) in members { self[key] = value }
    }

    init(members: [(key: String, value: PocketJSONValue)]) {
        self.members = members
        buildIndexIfLarge()
    }

    private mutating func buildIndexIfLarge() {
        guard members.count > Self.indexThreshold else { index = nil; return }
        var index = [String: Int](minimumCapacity: members.count)
        for (i, member) in members.enumerated() { index[member.key] = i }
        self.index = index
    }

    /// Number of members.
    public var count: Int { members.count }
    /// The keys in order.
    public var keys: [String] { members.map(\.key) }

    /// The position of the member named `key` (keys are unique: the parser
    /// rejects a repeated key, and setting one replaces its value).
    func position(of key: String) -> Int? {
        if let index { return index[key] }
        var i = 0
        while i < members.count {
            if members[i].key == key { return i }
            i += 1
        }
        return nil
    }

    /// The value for `key`, or nil. Setting nil removes the key; setting a
    /// new key appends it.
    public subscript(key: String) -> PocketJSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let i = position(of: key) {
                if let newValue {
                    members[i].value = newValue
                } else {
                    members.remove(at: i)
                    buildIndexIfLarge()
                }
            } else if let newValue {
                members.append((key: key, value: newValue))
                if index != nil {
                    index![key] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    buildIndexIfLarge()
                }
            }
        }
    }

    /// Replaces the value at member position `i` (used by the validator).
    mutating func setValue(_ value: PocketJSONValue, at i: Int) { members[i].value = value }

    /// Removes the members at `positions` (ascending).
    mutating func removeMembers(at positions: [Int]) {
        for i in positions.reversed() { members.remove(at: i) }
        buildIndexIfLarge()
    }

    /// Same keys with equal values, in any order.
    public static func == (lhs: PocketJSONObject, rhs: PocketJSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for member in lhs.members {
            guard let other = rhs[member.key], other == member.value else { return false }
        }
        return true
    }
}
