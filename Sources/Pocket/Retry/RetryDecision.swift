/// What to do after an attempt: returned by a `PocketRetryPolicy`, its predicate,
/// or a middleware's `retry` hook.
public enum PocketRetryDecision: Sendable, Hashable {
    /// Try again after the policy's backoff delay.
    case retry
    /// Try again after exactly this delay (e.g. what `Retry-After` asked for).
    case retryAfter(Duration)
    /// Return this outcome to the caller.
    case stop
}
