import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The retry loop against the in-process server, with a clock that records
/// waits instead of sleeping.
final class RetryLoopTests: XCTestCase {
    /// A route answering the given statuses in turn (the last repeats).
    private func sequence(_ server: TestServer, _ path: String, _ replies: [TestServer.Reply]) {
        let counter = Recorder<Int>()
        server.route(path) { _ in
            counter.append(1)
            return replies[min(counter.values.count - 1, replies.count - 1)]
        }
    }

    func testBackoffScheduleWithInjectedClock() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        sequence(server, "/flaky", [.text("busy", status: 503), .text("busy", status: 503), .text("busy", status: 500), .text("ok")])
        let clock = RecordingClock()
        let client = try clientWith {
            $0.clock = clock
            $0.retry = PocketRetryPolicy(maxAttempts: 5, backoff: .exponential(initial: .milliseconds(100), cap: .seconds(1), jitter: .none))
        }
        let response = try await client.send(PocketRequest(url: url(server, "/flaky")))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "ok")
        XCTAssertEqual(server.requestCount, 4)
        XCTAssertEqual(clock.recordedSleeps, [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
    }

    func testAttemptsRunOutAndTheLastResponseIsReturned() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/down") { _ in .text("down", status: 503) }
        let clock = RecordingClock()
        let client = try clientWith { $0.clock = clock; $0.retry = .fixed(maxAttempts: 3, interval: .seconds(2)) }
        let response = try await client.send(PocketRequest(url: url(server, "/down")))
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(server.requestCount, 3)
        XCTAssertEqual(clock.recordedSleeps, [.seconds(2), .seconds(2)])
    }

    func testRetryAfterSecondsAndHTTPDateOnTheWire() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let clock = RecordingClock()
        // 1_700_000_000 + 45 s, as an IMF-fixdate.
        sequence(server, "/throttled", [.text("slow down", status: 429, headers: [("Retry-After", "7")]),
                                        .text("later", status: 503, headers: [("Retry-After", "Tue, 14 Nov 2023 22:14:12 GMT")]),
                                        .text("ok")])
        let client = try clientWith { $0.clock = clock; $0.retry = PocketRetryPolicy(backoff: .fixed(.seconds(1))) }
        let response = try await client.send(PocketRequest(url: url(server, "/throttled")))
        XCTAssertEqual(response.status, 200)
        // The second wait is measured from the clock's date after the first wait (7 s later).
        XCTAssertEqual(clock.recordedSleeps, [.seconds(7), .seconds(45)])
    }

    func testPostIsNotRetriedUnlessItHasAnIdempotencyKey() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/orders") { _ in .text("oops", status: 503) }
        let clock = RecordingClock()
        let client = try clientWith { $0.clock = clock; $0.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.seconds(1))) }
        let plain = try await client.send(PocketRequest(method: .post, url: url(server, "/orders"), body: .text("{}")))
        XCTAssertEqual(plain.status, 503)
        XCTAssertEqual(server.requestCount, 1, "a POST is sent once")
        server.resetStatistics()
        let keyed = try await client.send(PocketRequest(method: .post, url: url(server, "/orders"),
                                                  headers: ["Idempotency-Key": "order-1"], body: .text("{}")))
        XCTAssertEqual(keyed.status, 503)
        XCTAssertEqual(server.requestCount, 3)
        XCTAssertEqual(server.receivedRequests.map { String(decoding: $0.body, as: UTF8.self) }, ["{}", "{}", "{}"],
                       "a replayable body is sent whole each time")
    }

    func testOneShotBodyIsNeverSentTwice() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/upload") { _ in .text("busy", status: 503) }
        let client = try clientWith { $0.clock = RecordingClock(); $0.retry = PocketRetryPolicy(nonIdempotent: .always) }
        let chunks = AsyncStream<Data> { c in
            c.yield(Data("part1".utf8))
            c.yield(Data("part2".utf8))
            c.finish()
        }
        let error = await assertPocketError(.bodyNotReplayable) {
            try await client.send(PocketRequest(method: .put, url: url(server, "/upload"), body: .stream(chunks, length: nil)))
        }
        XCTAssertEqual(error?.response?.status, 503, "the failed attempt's head is kept")
        XCTAssertTrue(error?.message.contains("one-shot") == true, error?.message ?? "")
        XCTAssertEqual(server.requestCount, 1)
        XCTAssertEqual(server.receivedRequests.first.map { String(decoding: $0.body, as: UTF8.self) }, "part1part2")
    }

    func testTransportErrorsAreRetriedOnANewConnection() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        sequence(server, "/reset", [.reset, .reset, .text("fine")])
        let client = try clientWith { $0.clock = RecordingClock(); $0.retry = PocketRetryPolicy(backoff: .fixed(.milliseconds(1))) }
        let response = try await client.send(PocketRequest(url: url(server, "/reset")))
        XCTAssertEqual(response.text, "fine")
        XCTAssertEqual(server.requestCount, 3)
    }

    /// On the system clock, with the policy as the only handling, the first
    /// attempt's failure reaches the policy as attempt 1, timed from before
    /// it was sent.
    func testWithOnlyARetryPolicyTheFirstFailureReachesItWithItsNumberAndTime() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let answered = Recorder<Int>()
        server.route("/slow-then-fine") { _ in
            answered.append(1)
            if answered.values.count > 1 { return .text("fine") }
            usleep(30_000)
            return .text("busy", status: 503)
        }
        let seen = Recorder<(Int, Duration, Int?)>()
        let client = try clientWith {
            $0.retry = PocketRetryPolicy(maxAttempts: 3) { attempt in
                seen.append((attempt.number, attempt.elapsed, attempt.response?.status))
                return attempt.response?.status == 503 ? .retryAfter(.zero) : .stop
            }
        }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: url(server, "/slow-then-fine")))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(server.requestCount, 2)
        let first = try XCTUnwrap(seen.values.first)
        XCTAssertEqual(seen.values.count, 1, "a success is not offered to the policy")
        XCTAssertEqual(first.0, 1)
        XCTAssertEqual(first.2, 503)
        XCTAssertGreaterThanOrEqual(first.1, .milliseconds(30), "timed from before the attempt")
    }

    /// With only a hedging policy, the first attempt's unacceptable answer
    /// sends the one hedge at once (nothing else runs), and the last answer's
    /// failure is the caller's as it is: one attempt, no retry.
    func testWithOnlyAHedgingPolicyAFailureIsHedgedThenThrownAsItIs() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/missing") { _ in .text("no", status: 404) }
        let client = try makeClient {
            $0.handling.hedging = PocketHedgingPolicy(delay: .fixed(.seconds(5)), maxHedges: 1)
            $0.validation = PocketValidation()
        }
        defer { Task { try? await client.shutdown() } }
        do {
            _ = try await client.send(PocketRequest(url: url(server, "/missing")))
            XCTFail("a 404 fails the validation")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .unacceptableStatus)
            XCTAssertFalse(error.message.contains("attempts"), error.message)
        }
        XCTAssertEqual(server.requestCount, 2, "the request and its one hedge")
        XCTAssertEqual(client.hedgeStatistics.sent, 1)
    }

    func testErrorsThatRetryingCannotFixAreNotRetried() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/garbage") { _ in .raw([.sendString("NOT HTTP\r\n\r\n")], closeConnection: true) }
        let clock = RecordingClock()
        let client = try clientWith { $0.clock = clock; $0.retry = PocketRetryPolicy() }
        await assertPocketError(.badStatusLine) { try await client.send(PocketRequest(url: url(server, "/garbage"))) }
        XCTAssertEqual(server.requestCount, 1)
        XCTAssertEqual(clock.recordedSleeps, [])
    }

    func testDeadlineAcrossAttemptsStopsRetrying() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/down") { _ in .text("down", status: 503) }
        let clock = RecordingClock()
        let client = try clientWith {
            $0.clock = clock
            $0.retry = PocketRetryPolicy(maxAttempts: 100, backoff: .fixed(.seconds(4)), deadline: .seconds(10))
        }
        let response = try await client.send(PocketRequest(url: url(server, "/down")))
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(clock.recordedSleeps, [.seconds(4), .seconds(4)], "a third wait would end past 10 s")
        XCTAssertEqual(server.requestCount, 3)
    }

    func testEveryRetryIsVisibleToObservers() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        sequence(server, "/flaky", [.text("busy", status: 503), .text("ok")])
        let client = try clientWith { $0.clock = RecordingClock(); $0.retry = PocketRetryPolicy(backoff: .fixed(.seconds(1))) }
        let seen = Recorder<PocketTaskEvent>()
        let retries = Recorder<PocketTaskEvent>()
        var options = PocketSendOptions()
        options.observers = [PocketTaskObserver { seen.append($0) }, PocketTaskObserver(states: [.retrying]) { retries.append($0) }]
        _ = try await client.send(PocketRequest(url: url(server, "/flaky")), options: options)
        XCTAssertEqual(seen.values.map(\.state), [.running, .retrying, .running, .finished])
        XCTAssertEqual(seen.values.map(\.attempt), [1, 1, 2, 2])
        XCTAssertEqual(retries.values.count, 1)
        XCTAssertEqual(retries.values.first?.status, 503)
        XCTAssertEqual(retries.values.first?.retryDelay, .seconds(1))
        XCTAssertEqual(seen.values.last?.status, 200)
    }

    /// An observer that keeps the events it is given keeps nothing else
    /// alive: an event holds what identifies its task, never the task's
    /// observers (which would hold the keeper: a cycle, found by
    /// LeakSanitizer when events referenced their task's sink).
    func testEventsKeptByTheirObserverHoldNoObserver() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/a") { _ in .text("a") }
        let client = try makeClient()
        weak var weakSeen: Recorder<PocketTaskEvent>?
        do {
            let seen = Recorder<PocketTaskEvent>()
            weakSeen = seen
            var options = PocketSendOptions()
            options.observers = [PocketTaskObserver { seen.append($0) }]
            _ = try await client.send(PocketRequest(url: url(server, "/a")), options: options)
            XCTAssertEqual(seen.values.map(\.state), [.running, .finished])
        }
        XCTAssertNil(weakSeen, "the events kept by the observer keep the observer (and so themselves) alive")
    }

    func testCancellingDuringTheBackoffWaitEndsWithCancelled() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/down") { _ in .text("down", status: 503) }
        let client = try clientWith { $0.retry = PocketRetryPolicy(maxAttempts: 5, backoff: .fixed(.seconds(60))) }
        let states = Recorder<PocketTaskState>()
        let task = Task {
            try await client.send(PocketRequest(url: url(server, "/down")),
                                  options: PocketSendOptions(observers: [PocketTaskObserver { states.append($0.state) }]))
        }
        await assertEventually("the first attempt failed and the wait began") { states.values.contains(.retrying) }
        task.cancel()
        await assertPocketError(.cancelled) { try await task.value }
        XCTAssertEqual(server.requestCount, 1)
        XCTAssertEqual(states.values.last, .cancelled)
    }

    func testPerRequestPolicyReplacesTheClients() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/down") { _ in .text("down", status: 503) }
        let client = try clientWith { $0.clock = RecordingClock(); $0.retry = PocketRetryPolicy(maxAttempts: 4, backoff: .fixed(.zero)) }
        _ = try await client.send(PocketRequest(url: url(server, "/down")), options: PocketSendOptions(retry: PocketRetryPolicy.none))
        XCTAssertEqual(server.requestCount, 1)
        _ = try await client.send(PocketRequest(url: url(server, "/down")))
        XCTAssertEqual(server.requestCount, 5)
    }
}
