import Foundation
import XCTest
@testable import Pocket

/// The attempts loop of `PocketClient.execute` (PocketClient+Execute.swift),
/// driven through a fake hop: retries, Retry-After, the attempt cap, body replay.
final class ExecuteTests: XCTestCase {
    private let url = URL(string: "http://service.test/items")!

    private func client(_ hop: FakeHop, retry: PocketRetryPolicy?, clock: RecordingClock = RecordingClock(),
                        middleware: [any PocketMiddleware] = []) throws -> PocketClient {
        try hop.client {
            $0.handling.retry = retry
            $0.handling.clock = clock
            $0.handling.middleware = middleware
        }
    }

    func testARetryableStatusIsRetriedUntilASuccess() async throws {
        let hop = FakeHop([answer(503), answer(502), answer(200, body: "ok")])
        let client = try client(hop, retry: PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.milliseconds(5))))
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "ok")
        XCTAssertEqual(hop.requests.count, 3)
    }

    func testRetryAfterIsTheWaitBeforeTheNextAttempt() async throws {
        let clock = RecordingClock()
        let hop = FakeHop([answer(503, ["Retry-After": "7"]), answer(200)])
        let client = try client(hop, retry: PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.milliseconds(1))), clock: clock)
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(clock.recordedSleeps, [.seconds(7)])
    }

    func testTheAttemptCapEndsRetriesWithTheLastResponse() async throws {
        let hop = FakeHop([answer(503)])
        let client = try client(hop, retry: PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero)))
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(hop.requests.count, 2)
    }

    func testAMiddlewaresRetriesAreCappedByTheDefaultMaxAttempts() async throws {
        let hop = FakeHop([answer(500)])
        let always = PocketClosureMiddleware(retry: { _, _, _ in .retry })
        let client = try client(hop, retry: nil, middleware: [always])
        defer { Task { try? await client.shutdown() } }
        do {
            _ = try await client.send(PocketRequest(url: url))
            XCTFail("expected tooManyAttempts")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .tooManyAttempts)
        }
        XCTAssertEqual(hop.requests.count, PocketRetryPolicy.defaultMaxAttempts)
    }

    func testABytesBodyIsSentAgainOnEveryAttempt() async throws {
        let hop = FakeHop([answer(503), answer(201)])
        let client = try client(hop, retry: PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero)))
        defer { Task { try? await client.shutdown() } }
        let request = PocketRequest(method: .put, url: url, body: .text("payload"))
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(hop.requests.count, 2)
        for sent in hop.requests { XCTAssertEqual(sent.body, .text("payload")) }
    }

    func testAOneShotBodyIsNeverSentAgain() async throws {
        let hop = FakeHop([answer(503), answer(201)])
        let client = try client(hop, retry: PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero)))
        defer { Task { try? await client.shutdown() } }
        let chunks = AsyncStream<Data> { $0.yield(Data("once".utf8)); $0.finish() }
        let request = PocketRequest(method: .put, url: url, body: .stream(chunks, length: 4))
        do {
            _ = try await client.send(request)
            XCTFail("expected bodyNotReplayable")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .bodyNotReplayable)
            XCTAssertEqual(error.response?.status, 503)
        }
        XCTAssertEqual(hop.requests.count, 1)
    }

    /// On the system clock with the retry policy as the only middleware,
    /// the first attempt is made without the loop (`executeFirstAttempt`);
    /// its failure is still attempt 1 of the loop, timed from its start.
    func testWithTheRetryPolicyAloneTheFirstAttemptsFailureGoesOnToTheLoop() async throws {
        let hop = FakeHop { _, n in
            switch n {
            case 1:
                usleep(30_000)
                throw PocketError(.connectionReset, "reset by the script")
            case 2: return answer(503)
            default: return answer(200, body: "ok")
            }
        }
        let seen = AttemptLog()
        let policy = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero), predicate: { attempt in
            seen.append(attempt.number, attempt.elapsed)
            return .retry
        })
        let client = try hop.client { $0.handling.retry = policy }
        defer { Task { try? await client.shutdown() } }
        XCTAssertTrue(client.retriesOnly)
        let response = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "ok")
        XCTAssertEqual(hop.requests.count, 3)
        let attempts = seen.entries
        XCTAssertEqual(attempts.map(\.number), [1, 2])
        XCTAssertGreaterThanOrEqual(attempts[0].elapsed, .milliseconds(25), "the first attempt is timed from its start")
        XCTAssertGreaterThanOrEqual(attempts[1].elapsed, attempts[0].elapsed)
    }

    func testWithTheRetryPolicyAloneAFirstSuccessIsOneAttempt() async throws {
        let hop = FakeHop([answer(204)])
        let client = try hop.client { $0.handling.retry = PocketRetryPolicy(maxAttempts: 3, backoff: .fixed(.zero)) }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: url))
        XCTAssertEqual(response.status, 204)
        XCTAssertEqual(hop.requests.count, 1)
    }

    func testEveryDeliveryTakesTheSameAttempts() async throws {
        let hop = FakeHop { _, n in n % 2 == 1 ? answer(503) : answer(200, body: "body") }
        let client = try client(hop, retry: PocketRetryPolicy(maxAttempts: 2, backoff: .fixed(.zero)))
        defer { Task { try? await client.shutdown() } }
        let streamed = try await client.stream(PocketRequest(url: url))
        XCTAssertEqual(streamed.status, 200)
        let streamedBody = try await streamed.body.collect(upTo: 100)
        XCTAssertEqual(streamedBody, Data("body".utf8))
        let sunk = try await client.send(PocketRequest(url: url)) { _ in CollectingSink() }
        XCTAssertEqual(sunk.response.status, 200)
        XCTAssertEqual(sunk.body.bytes, Data("body".utf8))
        XCTAssertEqual(hop.requests.count, 4)
    }
}

/// A sink that keeps what it is given.
final class CollectingSink: PocketResponseBodySink, @unchecked Sendable {
    // Invariant: written by the loop (or the sending task) before the send returns, read after.
    var bytes = Data()
    func write(_ chunk: UnsafeRawBufferPointer) -> PocketBodyWriteAnswer {
        bytes.append(contentsOf: chunk)
        return .proceed
    }
}

/// The attempts a retry predicate saw, in order.
final class AttemptLog: @unchecked Sendable {
    // Invariant: `list` is only touched under `lock`.
    private let lock = NSLock()
    private var list: [(number: Int, elapsed: Duration)] = []
    func append(_ number: Int, _ elapsed: Duration) { lock.withLock { list.append((number, elapsed)) } }
    var entries: [(number: Int, elapsed: Duration)] { lock.withLock { list } }
}
