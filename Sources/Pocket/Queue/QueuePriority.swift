/// Where a request goes in a `PocketRequestQueue`: a higher priority starts
/// first; equal priorities start in the order queued (FIFO).
public struct PocketQueuePriority: RawRepresentable, Comparable, Hashable, Sendable {
    /// Higher starts first.
    public let rawValue: Int
    /// A priority of your own between (or beyond) the named ones.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Below `.normal`: background work.
    public static let low = PocketQueuePriority(rawValue: -100)
    /// The default.
    public static let normal = PocketQueuePriority(rawValue: 0)
    /// Above `.normal`: what a user waits for.
    public static let high = PocketQueuePriority(rawValue: 100)

    /// Orders by `rawValue`.
    public static func < (a: PocketQueuePriority, b: PocketQueuePriority) -> Bool { a.rawValue < b.rawValue }
}
