extension PocketError.Code {
    /// The request would be sent again — a retry (the policy's or a
    /// middleware's), a redirect that keeps the body, or the engine's one
    /// resend after a reused connection failed — but its body is one-shot (a
    /// stream, or a multipart form with a stream part) and was already
    /// consumed: it is never sent twice. The message says which of these it
    /// was; `underlying` is the failed attempt's error and `response` its
    /// head, when there was one.
    public static let bodyNotReplayable = PocketError.Code("body_not_replayable")
    /// A middleware asked for another attempt past the retry policy's
    /// `maxAttempts` (3 without a policy): the one cap on attempts, a guard
    /// against retry loops.
    public static let tooManyAttempts = PocketError.Code("too_many_attempts")
}
