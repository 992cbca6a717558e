/// Where a request goes in a `RequestQueue`: a higher priority starts
/// first; equal priorities start in the order queued (FIFO).
public struct QueuePriority: RawRepresentable, Comparable, Hashable, Sendable {
    /// Higher starts first.
    public let rawValue: Int
    /// A priority of your own between (or beyond) the named ones.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Below `.normal`: background work.
    public static let low = QueuePriority(rawValue: -100)
    /// The default.
    public static let normal = QueuePriority(rawValue: 0)
    /// Above `.normal`: what a user waits for.
    public static let high = QueuePriority(rawValue: 100)

    /// Orders by `rawValue`.
    public static func < (a: QueuePriority, b: QueuePriority) -> Bool { a.rawValue < b.rawValue }
}
