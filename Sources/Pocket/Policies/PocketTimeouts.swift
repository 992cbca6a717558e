/// Deadlines of a request. `nil` disables one.
public struct PocketTimeouts: Sendable, Hashable, Codable {
    /// Name resolution plus TCP connect (per new connection). Default 10 s.
    public var connect: Duration?
    /// Longest silence while the request is in flight: no byte written or
    /// received for this long fails it with `.readTimeout`. Default 30 s.
    public var read: Duration?
    /// The whole request, from `send` to the last body byte. Default none.
    public var total: Duration?

    /// Deadlines of `connect` (10 s by default), `read` (30 s) and `total` (none); nil
    /// disables one.
    public init(connect: Duration? = .seconds(10), read: Duration? = .seconds(30), total: Duration? = nil) {
        self.connect = connect
        self.read = read
        self.total = total
    }

    /// The client's defaults: connect 10 s, read 30 s, no total deadline.
    public static let `default` = PocketTimeouts()

    static func milliseconds(_ d: Duration?) -> UInt32 {
        guard let d, d > .zero else { return 0 }
        let (s, atto) = d.components
        let ms = s * 1000 + (atto + 999_999_999_999_999) / 1_000_000_000_000_000
        return ms >= Int64(UInt32.max) ? UInt32.max : UInt32(ms)
    }
}

/// Timeouts as the engine takes them: whole milliseconds, 0 for none.
/// A client works its own out once (`Duration`'s 128-bit arithmetic is
/// not free), so a request without timeouts of its own converts nothing.
struct EngineTimeouts {
    let connect: UInt32
    let read: UInt32
    var total: UInt32
    /// The total timeout in whole nanoseconds (`.max` for none): what a
    /// task deadline is compared with.
    let totalNanos: Int64

    init(_ t: PocketTimeouts) {
        connect = PocketTimeouts.milliseconds(t.connect)
        read = PocketTimeouts.milliseconds(t.read)
        total = PocketTimeouts.milliseconds(t.total)
        totalNanos = t.total?.nanoseconds ?? .max
    }
}
