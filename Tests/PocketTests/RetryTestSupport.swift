import Foundation
@testable import Pocket

/// A clock that never waits: each sleep is recorded and advances virtual time.
final class RecordingClock: PocketRetryClock, @unchecked Sendable {
    // Invariant: `sleeps` and `offset` are only touched under `lock`.
    private let lock = NSLock()
    private var sleeps: [Duration] = []
    private var offset: Duration = .zero
    let start: Date

    init(date: Date = Date(timeIntervalSince1970: 1_700_000_000)) { start = date }

    var recordedSleeps: [Duration] { lock.withLock { sleeps } }

    func uptime() -> Duration { lock.withLock { offset } }
    func date() -> Date { lock.withLock { start.addingTimeInterval(PocketBackoff.seconds(offset)) } }
    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        lock.withLock {
            sleeps.append(duration)
            offset += duration
        }
        await Task.yield()
    }
}

/// A deterministic generator (SplitMix64) for jitter tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A client held weakly, for a middleware closure that calls its own client
/// (a strong reference would keep the client alive through its configuration).
final class WeakClient: @unchecked Sendable {
    // Invariant: `client` is set once, before any request reads it.
    weak var client: PocketClient?
}

/// A one-way gate handlers block on until the test opens it (bounded wait).
final class Gate: @unchecked Sendable {
    // Invariant: `open` is only touched under `condition`.
    private let condition = NSCondition()
    private var open = false
    func release() {
        condition.lock()
        open = true
        condition.broadcast()
        condition.unlock()
    }
    @discardableResult
    func wait(timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !open { if !condition.wait(until: deadline) { return open } }
        return true
    }
}

func clientWith(_ configure: (inout PocketRequestHandling) -> Void) throws -> PocketClient {
    try makeClient { config in configure(&config.handling) }
}
