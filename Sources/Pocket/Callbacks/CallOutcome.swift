/// How a `PocketCall` ended, as its completion handlers see it (MTPocket's
/// response object: success flag, response and error in one place).
public struct PocketCallOutcome: Sendable {
    /// The response, whenever the server answered, including a failure
    /// by status (then `error` is set too). Nil when no response came.
    public var response: PocketResponse?
    /// Why the call failed: a transport error, `.cancelled`, or a status
    /// outside 2xx. Nil on success.
    public var error: PocketError?

    /// True when a 2xx response arrived.
    public var isSuccess: Bool { error == nil && response != nil }
}
