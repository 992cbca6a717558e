import PocketBenchKit
import XCTest

/// `OpenLoopSchedule` on a fake clock: due times, the send window, and the
/// correction for coordinated omission (latency from the due time).
final class OpenLoopScheduleTests: XCTestCase {
    func testDueTimesAndWindow() {
        let s = OpenLoopSchedule(start: 1_000, rate: 1_000, offered: 5, grace: 500)
        XCTAssertEqual((0..<5).map(s.due), [1_000, 1_001_000, 2_001_000, 3_001_000, 4_001_000])
        XCTAssertEqual(s.closes, 4_001_500)
        XCTAssertEqual(s.sendTime(2, freeAt: 0), 2_001_000, "early: waits for its due time")
        XCTAssertEqual(s.sendTime(2, freeAt: 3_000_000), 3_000_000, "late: goes at once")
        XCTAssertEqual(s.sendTime(4, freeAt: 4_001_500), 4_001_500, "the window's last instant")
        XCTAssertNil(s.sendTime(4, freeAt: 4_001_501), "after the window: offered, not sent")
        XCTAssertNil(s.sendTime(5, freeAt: 0), "beyond the phase")
        XCTAssertEqual(s.latency(1, answeredAt: 1_251_000), 250_000)
        XCTAssertEqual(s.latency(1, answeredAt: 900_000), 1, "an answer before the due time counts as 1 ns")
        XCTAssertEqual(OpenLoopSchedule.offered(rate: 2_500, seconds: 1.5), 3_750)
        XCTAssertEqual(OpenLoopSchedule.offered(rate: 0.1, seconds: 1), 1)
    }

    /// One task, requests due every 1 ms, answered in 100 µs, but the server
    /// stalls 200 ms once. A closed loop would record one slow request; the
    /// requests due during the stall wait too, and their latency from their
    /// due time puts the stall in the p99.
    func testStallCountsForEveryRequestDueDuringIt() {
        let s = OpenLoopSchedule(start: 0, rate: 1_000, offered: 10_000)
        let run = simulate(s) { ticket in ticket == 5_000 ? 200_000_000 : 100_000 }
        XCTAssertEqual(run.sent, 10_000, "a task catches up after the stall: nothing left unsent")
        let corrected = percentile(run.corrected, 99)
        let fromSend = percentile(run.fromSend, 99)
        XCTAssertGreaterThan(corrected, 50_000_000, "p99 from the due times shows the stall")
        XCTAssertLessThan(fromSend, 1_000_000, "p99 from the send times hides it (coordinated omission)")
        XCTAssertEqual(run.corrected.max(), 200_000_000, "the stalled request itself")
        // Due 1 ms after it, sent when the stall ends, answered 100 µs later.
        XCTAssertEqual(run.corrected[5_001], 5_200_100_000 - 5_001_000_000)
    }

    /// Answers slower than the interval: one task cannot keep up, so about
    /// half the requests offered are sent, and latency grows with the backlog.
    func testSaturationLeavesRequestsUnsent() {
        let s = OpenLoopSchedule(start: 0, rate: 1_000, offered: 1_000, grace: 0)
        let run = simulate(s) { _ in 2_000_000 }
        XCTAssertEqual(run.sent, 500)
        XCTAssertGreaterThan(percentile(run.corrected, 99), 400_000_000, "the backlog's wait is the latency")
        XCTAssertEqual(percentile(run.fromSend, 99), 2_000_000)
    }

    /// One task on a fake clock: takes tickets in order, each sent at
    /// `sendTime` and answered `service(ticket)` later.
    private func simulate(_ s: OpenLoopSchedule, service: (Int) -> UInt64)
        -> (sent: Int, corrected: [UInt64], fromSend: [UInt64]) {
        var now: UInt64 = 0
        var corrected: [UInt64] = []
        var fromSend: [UInt64] = []
        var ticket = 0
        while let at = s.sendTime(ticket, freeAt: now) {
            now = at + service(ticket)
            corrected.append(s.latency(ticket, answeredAt: now))
            fromSend.append(now - at)
            ticket += 1
        }
        return (ticket, corrected, fromSend)
    }

    private func percentile(_ values: [UInt64], _ p: Double) -> UInt64 {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p / 100).rounded(.up)) - 1)]
    }
}
