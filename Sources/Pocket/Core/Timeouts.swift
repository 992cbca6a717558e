/// Deadlines of a request. `nil` disables one.
public struct PocketTimeouts: Sendable, Hashable, Codable {
    /// Name resolution plus TCP connect (per new connection). Default 10 s.
    public var connect: Duration?
    /// Longest silence while the request is in flight: no byte written or
    /// received for this long fails it with `.readTimeout`. Default 30 s.
    public var read: Duration?
    /// The whole request, from `send` to the last body byte. Default none.
    public var total: Duration?

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
