/// Which of a middleware's hooks the chain calls (`PocketMiddleware.hooks`).
public struct PocketMiddlewareHooks: OptionSet, Sendable, Hashable {
    /// The set's bits (`adapt` 1, `observe` 2, `retry` 4).
    public let rawValue: UInt8
    /// Makes a hook set from its raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `adapt` is called before each attempt.
    public static let adapt = PocketMiddlewareHooks(rawValue: 1)
    /// `observe` is called with each attempt's outcome.
    public static let observe = PocketMiddlewareHooks(rawValue: 2)
    /// `retry` is asked about each failed attempt.
    public static let retry = PocketMiddlewareHooks(rawValue: 4)
    /// Every hook: the default.
    public static let all: PocketMiddlewareHooks = [.adapt, .observe, .retry]
}
