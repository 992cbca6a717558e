import Foundation
import XCTest
@testable import Pocket

/// The retry rules as pure values: no network, no clock.
final class RetryPolicyTests: XCTestCase {
    private func attempt(_ method: PocketMethod = .get, status: Int? = nil, headers: PocketHeaders = [:],
                         error: PocketError.Code? = nil, number: Int = 1, requestHeaders: PocketHeaders = [:],
                         elapsed: Duration = .zero) -> PocketRetryAttempt {
        PocketRetryAttempt(request: PocketRequest(method: method, url: URL(string: "http://example.test/x")!, headers: requestHeaders),
                     number: number, response: status.map { PocketResponse(status: $0, headers: headers) },
                     error: error.map { PocketError($0, "test") }, elapsed: elapsed)
    }

    private let now = Date(timeIntervalSince1970: 1_700_000_000)

    func testFixedBackoffIsTheSameEveryTime() {
        let backoff = PocketBackoff.fixed(.seconds(5))
        var g = SeededGenerator(state: 1)
        XCTAssertEqual((1...4).map { backoff.delay(forRetry: $0, using: &g) }, Array(repeating: .seconds(5), count: 4))
    }

    func testExponentialScheduleDoublesUpToTheCap() {
        let backoff = PocketBackoff.exponential(initial: .milliseconds(100), multiplier: 2, cap: .seconds(1), jitter: .none)
        var g = SeededGenerator(state: 1)
        XCTAssertEqual((1...7).map { backoff.delay(forRetry: $0, using: &g) },
                       [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                        .seconds(1), .seconds(1), .seconds(1)])
        XCTAssertEqual(backoff.ceiling(forRetry: 10_000), .seconds(1), "a huge retry number saturates at the cap")
    }

    func testFullJitterStaysUnderTheCeilingAndVaries() {
        let backoff = PocketBackoff.exponential(initial: .milliseconds(100), multiplier: 2, cap: .seconds(2))
        var g = SeededGenerator(state: 42)
        for retry in 1...8 {
            var seen = Set<Duration>()
            for _ in 0..<50 {
                let d = backoff.delay(forRetry: retry, using: &g)
                XCTAssertGreaterThanOrEqual(d, .zero)
                XCTAssertLessThanOrEqual(d, backoff.ceiling(forRetry: retry))
                seen.insert(d)
            }
            XCTAssertGreaterThan(seen.count, 40, "full jitter spreads the delays (retry \(retry))")
        }
    }

    func testRetryAfterSecondsAndDates() {
        XCTAssertEqual(RetryAfter.delay("120", now: now), .seconds(120))
        XCTAssertEqual(RetryAfter.delay(" 7 ", now: now), .seconds(7))
        XCTAssertEqual(RetryAfter.delay("0", now: now), .zero)
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        XCTAssertEqual(RetryAfter.delay("Tue, 14 Nov 2023 22:13:50 GMT", now: now), .seconds(30))
        XCTAssertEqual(RetryAfter.delay("Tuesday, 14-Nov-23 22:14:20 GMT", now: now), .seconds(60))
        XCTAssertEqual(RetryAfter.delay("Tue Nov 14 22:13:25 2023", now: now), .seconds(5))
        XCTAssertEqual(RetryAfter.delay("Tue, 14 Nov 2023 20:00:00 GMT", now: now), .zero, "a date in the past: retry now")
        for bad in ["", "soon", "-5", "1.5", "Tue, 32 Nov 2023 22:13:50 GMT", "Tue, 14 Foo 2023 22:13:50 GMT", "Tue, 14 Nov 2023 25:00:00 GMT",
                    "Thu, 31 Feb 2024 10:00:00 GMT", "Sun, 29 Feb 2023 10:00:00 GMT", "Fri, 01 Jan 9223372036854775807 00:00:00 GMT"] {
            XCTAssertNil(RetryAfter.delay(bad, now: now), bad)
        }
    }

    func testRetryAfterIsHonouredAndCapped() {
        var g = SeededGenerator(state: 1)
        let policy = PocketRetryPolicy(maxRetryAfter: .seconds(60))
        XCTAssertEqual(policy.decide(attempt(status: 503, headers: ["Retry-After": "3"]), now: now, using: &g), .retryAfter(.seconds(3)))
        XCTAssertEqual(policy.decide(attempt(status: 429, headers: ["Retry-After": "Tue, 14 Nov 2023 22:13:30 GMT"]), now: now, using: &g),
                       .retryAfter(.seconds(10)))
        XCTAssertEqual(policy.decide(attempt(status: 503, headers: ["Retry-After": "86400"]), now: now, using: &g), .retryAfter(.seconds(60)))
        var ignoring = policy
        ignoring.honoursRetryAfter = false
        ignoring.backoff = .fixed(.milliseconds(250))
        XCTAssertEqual(ignoring.decide(attempt(status: 503, headers: ["Retry-After": "3"]), now: now, using: &g),
                       .retryAfter(.milliseconds(250)))
    }

    func testIdempotencyRules() {
        var g = SeededGenerator(state: 1)
        let policy = PocketRetryPolicy(backoff: .fixed(.seconds(1)))
        for method: PocketMethod in [.get, .head, .options, .put, .delete, .trace] {
            XCTAssertEqual(policy.decide(attempt(method, status: 503), now: now, using: &g), .retryAfter(.seconds(1)), "\(method)")
        }
        for method: PocketMethod in [.post, .patch, "PURGE"] {
            XCTAssertEqual(policy.decide(attempt(method, status: 503), now: now, using: &g), .stop, "\(method)")
            XCTAssertEqual(policy.decide(attempt(method, error: .connectionReset), now: now, using: &g), .stop, "\(method)")
        }
        let keyed = attempt(.post, status: 503, requestHeaders: ["Idempotency-Key": "abc"])
        XCTAssertEqual(policy.decide(keyed, now: now, using: &g), .retryAfter(.seconds(1)), "an Idempotency-Key opts a POST in")
        var never = policy
        never.nonIdempotent = .never
        XCTAssertEqual(never.decide(keyed, now: now, using: &g), .stop)
        var always = policy
        always.nonIdempotent = .always
        XCTAssertEqual(always.decide(attempt(.post, status: 502), now: now, using: &g), .retryAfter(.seconds(1)))
    }

    func testWhichStatusesAndErrorsAreRetried() {
        var g = SeededGenerator(state: 1)
        let policy = PocketRetryPolicy(backoff: .fixed(.seconds(1)))
        for status in [408, 429, 500, 502, 503, 504] {
            XCTAssertEqual(policy.decide(attempt(status: status), now: now, using: &g), .retryAfter(.seconds(1)), "\(status)")
        }
        for status in [200, 201, 204, 301, 400, 401, 403, 404, 409, 501, 505] {
            XCTAssertEqual(policy.decide(attempt(status: status), now: now, using: &g), .stop, "\(status)")
        }
        for code: PocketError.Code in [.connectionRefused, .connectionReset, .closedBeforeResponse, .connectTimeout, .readTimeout, .dnsFailure] {
            XCTAssertEqual(policy.decide(attempt(error: code), now: now, using: &g), .retryAfter(.seconds(1)), "\(code)")
        }
        for code: PocketError.Code in [.cancelled, .shutdown, .tlsUntrustedCertificate, .tlsHostnameMismatch, .bodyTooLarge,
                                       .badStatusLine, .invalidURL, .decompressionBomb] {
            XCTAssertEqual(policy.decide(attempt(error: code), now: now, using: &g), .stop, "\(code)")
        }
    }

    func testAttemptLimitDeadlineAndPredicate() {
        var g = SeededGenerator(state: 1)
        let policy = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.seconds(1)), deadline: .seconds(10))
        XCTAssertEqual(policy.decide(attempt(status: 503, number: 2), now: now, using: &g), .retryAfter(.seconds(1)))
        XCTAssertEqual(policy.decide(attempt(status: 503, number: 3), now: now, using: &g), .stop, "3 attempts made")
        XCTAssertEqual(policy.decide(attempt(status: 503, elapsed: .seconds(9)), now: now, using: &g), .stop,
                       "the wait would pass the deadline")
        XCTAssertEqual(PocketRetryPolicy.none.decide(attempt(status: 503), now: now, using: &g), .stop)

        let custom = PocketRetryPolicy(maxAttempts: 5, backoff: .fixed(.seconds(1))) { attempt in
            if attempt.response?.status == 404 { return .retryAfter(.milliseconds(5)) }
            if attempt.pocketError?.code == .tlsHandshakeFailed { return .retry }
            return .stop
        }
        XCTAssertEqual(custom.decide(attempt(status: 404), now: now, using: &g), .retryAfter(.milliseconds(5)))
        XCTAssertEqual(custom.decide(attempt(.post, error: .tlsHandshakeFailed), now: now, using: &g), .retryAfter(.seconds(1)),
                       "a predicate replaces the default rules")
        XCTAssertEqual(custom.decide(attempt(status: 503), now: now, using: &g), .stop)
        XCTAssertEqual(custom.decide(attempt(status: 404, number: 5), now: now, using: &g), .stop, "maxAttempts still applies")
    }
}
