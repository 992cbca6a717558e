#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When and how often a request is tried again: a middleware, the last of
/// the client's chain (`Configuration.handling.retry`) or of one request's
/// (`PocketSendOptions.retry`, `PocketEndpoint.retryPolicy`). Its rules are a
/// pure value: `decide` maps an attempt's outcome to a `PocketRetryDecision`
/// and does no I/O, so they are testable on their own.
///
/// It is asked about failures only: an error, or a response that fails the
/// request's `PocketValidation` (with none: a status outside 2xx and 3xx).
/// A response that counts as a success is never retried, whatever the
/// predicate would say. Its `maxAttempts` is the one cap on attempts: it
/// also bounds the retries other middleware ask for (a token refresh).
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.retry = PocketRetryPolicy(maxAttempts: 4, backoff: .exponential(cap: .seconds(5)))
/// ```
///
/// Defaults follow RFC 9110 §9.2.2: only idempotent methods (GET, HEAD,
/// OPTIONS, PUT, DELETE, TRACE) are retried, on transport errors and on
/// 408, 429, 500, 502, 503 and 504; a POST or PATCH only when it carries an
/// `Idempotency-Key` (the caller's opt-in) or `nonIdempotent` is `.always`.
/// A request whose body is a one-shot stream is never re-sent: when a retry
/// would be due, the request fails with `.bodyNotReplayable` instead.
/// Idempotency follows one rule, shared with the engine's resend after a
/// stale pooled connection: the method (`PocketMethod.isIdempotent`), or an
/// `Idempotency-Key` header field (`PocketRequest.isIdempotent`).
public struct PocketRetryPolicy: Sendable {
    /// Which non-idempotent requests (POST, PATCH, …) may be retried.
    public enum NonIdempotentRetry: Sendable, Hashable {
        /// Never.
        case never
        /// Only when the request has an `Idempotency-Key` header field (the
        /// server then deduplicates).
        case withIdempotencyKey
        /// Always: the caller knows repeating is harmless.
        case always
    }

    /// Attempts in all, the first included: 3 by default (two retries),
    /// enough to ride out a restart or a dropped connection without
    /// multiplying load on a server that is really down. The one cap on
    /// attempts: a middleware's retry past it is `.tooManyAttempts`.
    public var maxAttempts: Int
    /// Delays between attempts: exponential from 100 ms to 10 s with full
    /// jitter by default.
    public var backoff: PocketBackoff
    /// Statuses that are retried: 408, 429, 500, 502, 503, 504 by default
    /// (timeouts, throttling and gateway or overload failures, which are
    /// usually transient; other 5xx usually are not).
    public var retryableStatuses: Set<Int>
    /// Transport error codes that are retried: connection refused, reset or
    /// closed early, connect and read timeouts, DNS and routing failures,
    /// short reads and writes. Certificate errors, cancellation, shutdown,
    /// limits and protocol errors are not (retrying cannot fix them).
    public var retryableErrors: Set<PocketError.Code>
    /// POST/PATCH and other non-idempotent methods: `.withIdempotencyKey` by default.
    public var nonIdempotent: NonIdempotentRetry
    /// Honour `Retry-After` (seconds or HTTP-date) on a retried status; true by default.
    public var honoursRetryAfter: Bool
    /// The longest `Retry-After` honoured, 60 s by default: a longer one is
    /// clamped to this, so a broken or hostile server cannot park a request for hours.
    public var maxRetryAfter: Duration
    /// A deadline across all attempts and the waits between them; nil (the
    /// default) for none. A retry whose delay would pass it is not made, and
    /// each attempt's total timeout is shortened to what remains.
    public var deadline: Duration?
    /// Replaces the default rules (statuses, errors, methods): it gets each
    /// attempt and says retry, retry after a delay, or stop. `maxAttempts`,
    /// `deadline` and the one-shot body rule still apply. Nil by default.
    public var predicate: (@Sendable (PocketRetryAttempt) -> PocketRetryDecision)?

    /// A policy; every parameter defaults as its property says. `maxAttempts` below 1 counts as 1.
    public init(maxAttempts: Int = 3, backoff: PocketBackoff = .exponential(), retryableStatuses: Set<Int> = PocketRetryPolicy.defaultStatuses,
                retryableErrors: Set<PocketError.Code> = PocketRetryPolicy.defaultErrors,
                nonIdempotent: NonIdempotentRetry = .withIdempotencyKey, honoursRetryAfter: Bool = true,
                maxRetryAfter: Duration = .seconds(60), deadline: Duration? = nil,
                predicate: (@Sendable (PocketRetryAttempt) -> PocketRetryDecision)? = nil) {
        self.maxAttempts = max(1, maxAttempts)
        self.backoff = backoff
        self.retryableStatuses = retryableStatuses
        self.retryableErrors = retryableErrors
        self.nonIdempotent = nonIdempotent
        self.honoursRetryAfter = honoursRetryAfter
        self.maxRetryAfter = maxRetryAfter
        self.deadline = deadline
        self.predicate = predicate
    }

    /// A fixed `interval` between up to `maxAttempts` attempts (STNetTaskQueue's
    /// `maxRetryCount` + 1 and `retryInterval`).
    public static func fixed(maxAttempts: Int, interval: Duration) -> PocketRetryPolicy {
        PocketRetryPolicy(maxAttempts: maxAttempts, backoff: .fixed(interval))
    }

    /// One attempt, no retries.
    public static let none = PocketRetryPolicy(maxAttempts: 1)

    /// The cap on attempts of a request with no retry policy (retries that
    /// middleware ask for), 3: as a default policy's.
    public static let defaultMaxAttempts = 3

    /// 408 Request Timeout, 429 Too Many Requests, 500, 502, 503, 504.
    public static let defaultStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// Transport failures worth another try.
    public static let defaultErrors: Set<PocketError.Code> = [
        .connectionRefused, .connectionReset, .closedBeforeResponse, .connectTimeout, .readTimeout,
        .dnsFailure, .networkUnreachable, .hostUnreachable, .connectFailed, .writeFailed, .readFailed,
        .truncatedHead, .truncatedBody, .tlsAlert,
    ]

    /// Whether `request`'s method may be retried under this policy.
    public func allowsRetry(of request: PocketRequest) -> Bool {
        if request.method.isIdempotent { return true }
        switch nonIdempotent {
        case .never: return false
        case .withIdempotencyKey: return request.isIdempotent
        case .always: return true
        }
    }

    /// The default rules alone (no attempt count, deadline or predicate):
    /// `.retryAfter` when a retried status carries a usable `Retry-After`
    /// (clamped to `maxRetryAfter`), `.retry` for other retryable outcomes,
    /// `.stop` otherwise. `now` is the wall clock, for HTTP-dates.
    public func defaultDecision(for attempt: PocketRetryAttempt, now: Date) -> PocketRetryDecision {
        guard allowsRetry(of: attempt.request) else { return .stop }
        if let response = attempt.response {
            guard retryableStatuses.contains(response.status) else { return .stop }
            if honoursRetryAfter, let value = response.headers["Retry-After"],
               let delay = RetryAfter.delay(value, now: now) {
                return .retryAfter(min(delay, maxRetryAfter))
            }
            return .retry
        }
        if let error = attempt.pocketError, retryableErrors.contains(error.code) { return .retry }
        return .stop
    }

    /// The full decision for `attempt`: the predicate (or the default rules),
    /// then the attempt limit, then the deadline. `.retry` is resolved to a
    /// concrete `.retryAfter` with the backoff (drawing jitter from `generator`).
    public func decide<G: RandomNumberGenerator>(_ attempt: PocketRetryAttempt, now: Date,
                                                 using generator: inout G) -> PocketRetryDecision {
        guard attempt.number < maxAttempts else { return .stop }
        let decision = predicate?(attempt) ?? defaultDecision(for: attempt, now: now)
        return resolve(decision, after: attempt, using: &generator)
    }

    /// `decision` with `.retry` turned into the backoff delay, and `.stop`
    /// when the delay would pass the deadline.
    func resolve<G: RandomNumberGenerator>(_ decision: PocketRetryDecision, after attempt: PocketRetryAttempt,
                                           using generator: inout G) -> PocketRetryDecision {
        let delay: Duration
        switch decision {
        case .stop: return .stop
        case .retry: delay = backoff.delay(forRetry: attempt.number, using: &generator)
        case .retryAfter(let d): delay = max(.zero, d)
        }
        if let deadline, attempt.elapsed + delay >= deadline { return .stop }
        return .retryAfter(delay)
    }
}

extension PocketRetryPolicy: PocketMiddleware {
    /// `retry` only.
    public var hooks: PocketMiddlewareHooks { .retry }

    /// The policy's opinion on a failed attempt: `decide` with the attempt
    /// as the context records it (a response that failed validation comes
    /// with `context.validationFailure` as its error).
    public func retry(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                      context: PocketMiddlewareContext) async throws -> PocketRetryDecision? {
        var attempt = PocketRetryAttempt(request: request, number: context.attempt, elapsed: context.elapsed)
        switch outcome {
        case .success(let response):
            attempt.response = response
            attempt.error = context.validationFailure
        case .failure(let error):
            attempt.error = error
        }
        var generator = SystemRandomNumberGenerator()
        return decide(attempt, now: context.clock.date(), using: &generator)
    }
}

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
