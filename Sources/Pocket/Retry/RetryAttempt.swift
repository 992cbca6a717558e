/// One finished attempt, as a retry policy's predicate sees it.
public struct PocketRetryAttempt: Sendable {
    /// The request as it was sent (after middleware adapted it).
    public var request: PocketRequest
    /// 1 for the first attempt.
    public var number: Int
    /// The response, when the server answered (any status).
    public var response: PocketResponse?
    /// The error, when no response arrived.
    public var error: (any Error)?
    /// Time since the first attempt started.
    public var elapsed: Duration

    /// An attempt record, e.g. to test a predicate.
    public init(request: PocketRequest, number: Int, response: PocketResponse? = nil, error: (any Error)? = nil,
                elapsed: Duration = .zero) {
        self.request = request
        self.number = number
        self.response = response
        self.error = error
        self.elapsed = elapsed
    }

    /// The error as a `PocketError`, if it is one.
    public var pocketError: PocketError? { error as? PocketError }
}
