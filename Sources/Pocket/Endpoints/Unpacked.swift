/// Marks a property that parameter packing leaves out (STNetTaskQueue's
/// `STIgnore`): it is never sent, whatever the format.
///
/// ```swift
/// struct Login: Encodable, Sendable { var user: String; @Unpacked var rememberLocally = true }
/// ```
@propertyWrapper
public struct PocketUnpacked<Value: Sendable>: Sendable {
    /// The value, usable in Swift but never packed.
    public var wrappedValue: Value
    /// Wraps `wrappedValue`.
    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }
}

extension PocketUnpacked: Encodable {
    /// Writes nothing (reached only outside a keyed container).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encodeNil()
    }
}

extension PocketUnpacked: Hashable where Value: Hashable {}
extension PocketUnpacked: Equatable where Value: Equatable {}

extension KeyedEncodingContainer {
    /// Skips an `@PocketUnpacked` property: its key is not written at all.
    public mutating func encode<Value>(_ value: PocketUnpacked<Value>, forKey key: Key) throws {}
}
