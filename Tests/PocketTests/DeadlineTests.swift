import Foundation
import Synchronization
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketDeadline`: one task deadline over every attempt, backoff wait and
/// redirect hop of a request, through real sockets.
final class DeadlineTests: XCTestCase {
    /// How late past its deadline a call may end on a loaded 2-core machine
    /// (the engine's timer is whole milliseconds, rounded up).
    private let slack: Duration = .milliseconds(40)

    func testStalledServerEndsAtTheDeadline() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 5000) }
        let client = try makeClient()
        let start = ContinuousClock.now
        let error = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(in: .milliseconds(200)) {
                try await client.send(PocketRequest(url: url(server, "/")))
            }
        }
        let took = ContinuousClock.now - start
        XCTAssertEqual(error?.isTimeout, true)
        XCTAssertEqual((error?.underlying as? PocketError)?.code, .totalTimeout, "the engine's timer, cut to the time left")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(195))
        XCTAssertLessThan(took, .milliseconds(200) + slack)
    }

    func testDeadlineSpansRetriesAndNeverSleepsPastIt() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("busy", status: 503) }
        let client = try makeClient {
            $0.handling.retry = PocketRetryPolicy(maxAttempts: 20, backoff: .fixed(.milliseconds(100)))
        }
        let start = ContinuousClock.now
        let error = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(in: .milliseconds(350)) {
                try await client.send(PocketRequest(url: url(server, "/")))
            }
        }
        let took = ContinuousClock.now - start
        // Attempts at 0, 100, 200 and 300 ms; the wait after the fourth
        // would end past 350 ms, so it is not waited.
        XCTAssertEqual(server.requestCount, 4)
        XCTAssertEqual(error?.response?.status, 503, "the last answer is kept")
        XCTAssertLessThan(took, .milliseconds(350), "the last backoff is not slept")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(290))
    }

    func testDeadlineSpansARedirect() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/from") { _ in
            .raw([.sleep(milliseconds: 150), .sendString("HTTP/1.1 302 Found\r\nLocation: /to\r\nContent-Length: 0\r\n\r\n")])
        }
        server.route("/to") { _ in .stall(milliseconds: 5000) }
        let client = try makeClient()
        let start = ContinuousClock.now
        _ = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(in: .milliseconds(300)) {
                try await client.send(PocketRequest(url: url(server, "/from")))
            }
        }
        let took = ContinuousClock.now - start
        XCTAssertEqual(server.receivedRequests.map(\.path), ["/from", "/to"])
        XCTAssertGreaterThanOrEqual(took, .milliseconds(295))
        XCTAssertLessThan(took, .milliseconds(300) + slack, "the hop gets what is left, not a fresh 300 ms")
    }

    func testARedirectHopAfterTheDeadlineIsNotSent() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/from") { _ in .raw([.sendString("HTTP/1.1 302 Found\r\nLocation: /to\r\nContent-Length: 0\r\n\r\n")]) }
        server.route("/to") { _ in .text("late") }
        let client = try makeClient()
        var request = PocketRequest(url: url(server, "/from"))
        // The hook outlives the deadline: the hop after it has no time left.
        request.redirects = PocketRedirectPolicy(onRedirect: { _ in
            try await Task.sleep(for: .milliseconds(250))
            return .follow
        })
        let start = ContinuousClock.now
        _ = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(in: .milliseconds(150)) { try await client.send(request) }
        }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(250) + slack)
        XCTAssertEqual(server.receivedRequests.map(\.path), ["/from"], "nothing is sent past the deadline")
    }

    func testTheRequestsOwnTotalTimeoutStaysATotalTimeout() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 5000) }
        let client = try makeClient()
        var request = PocketRequest(url: url(server, "/"))
        request.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(5), total: .milliseconds(150))
        _ = await assertPocketError(.totalTimeout) {
            try await PocketDeadline.withDeadline(in: .seconds(5)) { try await client.send(request) }
        }
    }

    func testAPassedDeadlineSendsNothing() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        _ = await assertPocketError(.deadlineExceeded) {
            try await PocketDeadline.withDeadline(at: .now - .milliseconds(1)) {
                try await client.send(PocketRequest(url: url(server, "/")))
            }
        }
        XCTAssertEqual(server.requestCount, 0)
    }

    func testTheHeaderCarriesTheTimeLeftInMilliseconds() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient { $0.handling.deadlineHeader = "X-Deadline-Ms" }
        _ = try await PocketDeadline.withDeadline(in: .milliseconds(800)) {
            try await client.send(PocketRequest(url: url(server, "/")))
        }
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        let sent = server.receivedRequests.map { $0.header("X-Deadline-Ms") }
        XCTAssertEqual(sent.count, 2)
        let left = try XCTUnwrap(sent[0].flatMap { Int($0) })
        XCTAssertLessThanOrEqual(left, 800)
        XCTAssertGreaterThan(left, 600)
        XCTAssertNil(sent[1], "no deadline, no header")
    }

    func testTheHeaderIsOffByDefault() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let client = try makeClient()
        _ = try await PocketDeadline.withDeadline(in: .seconds(5)) {
            try await client.send(PocketRequest(url: url(server, "/")))
        }
        XCTAssertFalse(server.receivedRequests[0].headers.contains { $0.1.allSatisfy(\.isNumber) && $0.0.lowercased().contains("deadline") })
    }

    func testANestedDeadlineNeverExtendsTheOuterOne() async {
        let outer = ContinuousClock.now + .milliseconds(100)
        await PocketDeadline.withDeadline(at: outer) {
            await PocketDeadline.withDeadline(in: .seconds(10)) {
                XCTAssertEqual(PocketDeadline.current, outer)
            }
            await PocketDeadline.withDeadline(in: .milliseconds(10)) {
                XCTAssertLessThan(PocketDeadline.current!, outer)
            }
        }
        XCTAssertNil(PocketDeadline.current)
    }

    func testADeadlineInADurationIsThatFarFromNowAndSaturates() async {
        let before = ContinuousClock.now
        await PocketDeadline.withDeadline(in: .milliseconds(250)) {
            let after = ContinuousClock.now
            let deadline = PocketDeadline.current!
            // Kept in nanoseconds of the raw clock, whose origin was read a
            // moment before the instant one: read back a moment later.
            XCTAssertGreaterThanOrEqual(deadline, before + .milliseconds(250))
            XCTAssertLessThanOrEqual(deadline, after + .milliseconds(251))
        }
        await PocketDeadline.withDeadline(in: .seconds(Int64.max)) {
            XCTAssertNotNil(PocketDeadline.current, "a far deadline is still one")
            XCTAssertGreaterThan(PocketDeadline.remaining!, .seconds(86_400 * 365))
        }
        await PocketDeadline.withDeadline(in: .seconds(-5)) {
            XCTAssertLessThan(PocketDeadline.remaining!, .seconds(-4), "a deadline in the past has passed")
        }
        await PocketDeadline.withDeadline(at: .now + .seconds(Int64.max)) {
            XCTAssertNotNil(PocketDeadline.current, "a far instant is still a deadline")
        }
        // A duration between two instants can hold more seconds than an
        // Int64 does: its nanoseconds saturate (`components` would trap).
        let long = (ContinuousClock.now + .seconds(Int64.max)) - (ContinuousClock.now - .seconds(10))
        XCTAssertEqual(long.nanoseconds, .max)
        XCTAssertEqual((.zero - long).nanoseconds, .min)
        XCTAssertEqual(Duration.milliseconds(1500).nanoseconds, 1_500_000_000)
        XCTAssertEqual(Duration.nanoseconds(-7).nanoseconds, -7)
    }

    func testAMiddlewareCanTightenTheDeadline() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .stall(milliseconds: 5000) }
        let client = try makeClient {
            $0.handling.middleware = [PocketClosureMiddleware(adapt: { request, context in
                context.deadline = .now + .milliseconds(150)
                return request
            })]
        }
        let start = ContinuousClock.now
        _ = await assertPocketError(.deadlineExceeded) { try await client.send(PocketRequest(url: url(server, "/"))) }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(150) + slack)
    }

    func testHeaderMillisecondsRoundDown() {
        XCTAssertEqual(PocketDeadline.milliseconds(.microseconds(1999)), 1)
        XCTAssertEqual(PocketDeadline.milliseconds(.seconds(2)), 2000)
        XCTAssertEqual(PocketDeadline.milliseconds(.milliseconds(-5)), 0)
    }

    /// The time left in whole nanoseconds becomes the deadline header's
    /// whole milliseconds, rounded down.
    func testNanosecondsBecomeHeaderMillisecondsAsDurationsDo() {
        XCTAssertEqual(PocketDeadline.milliseconds(nanoseconds: 1_999_999), 1)
    }
}
