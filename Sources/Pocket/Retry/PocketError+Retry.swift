extension PocketError.Code {
    /// A retry was due (by the policy or a middleware) but the request's body
    /// is a one-shot stream, already consumed: it is never sent twice.
    /// `underlying` is the failed attempt's error; `response` its head.
    public static let bodyNotReplayable = PocketError.Code("body_not_replayable")
    /// Middleware asked for more attempts than `PocketRequestHandling.maxAttempts`
    /// allows: a guard against retry loops.
    public static let tooManyAttempts = PocketError.Code("too_many_attempts")
}
