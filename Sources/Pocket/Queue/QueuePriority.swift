/// Where a request goes in a `RequestQueue`: a higher priority starts
/// first; equal priorities start in the order queued (FIFO).
public struct QueuePriority: RawRepresentable, Comparable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let low = QueuePriority(rawValue: -100)
    /// The default.
    public static let normal = QueuePriority(rawValue: 0)
    public static let high = QueuePriority(rawValue: 100)

    public static func < (a: QueuePriority, b: QueuePriority) -> Bool { a.rawValue < b.rawValue }
}
