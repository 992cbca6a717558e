import Foundation
import Histogram
@testable import PocketBenchKit
import XCTest

/// `BenchReport`'s fault keys without sockets: `server_requests` and the
/// kill's timing and error counts, in the JSON and in the text.
final class BenchReportTests: XCTestCase {
    private func report(offered: Int? = 1_000) -> BenchReport {
        var tally = BenchTally()
        for _ in 0..<10 { tally.count(BenchOutcome(status: 200, bytes: 13, reused: true)) }
        return BenchReport(client: "pocket", scenario: nil, url: "http://127.0.0.1:1/", replicas: 3, rate: 100,
                           offered: offered, embedded: true, connections: 8, engineThreads: 1, onLoop: false,
                           ioBackend: nil, warmup: 0, tally: tally, elapsedNanos: 1_000_000_000,
                           latencies: Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000,
                                                        numberOfSignificantValueDigits: .three),
                           cpuNanos: 0, serverCPUNanos: 0, engineAllocations: nil, heapAllocations: nil, userInstructions: nil)
    }

    private func json(_ r: BenchReport) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.json().utf8)) as? [String: Any])
    }

    func testNoFaultKeysByDefault() throws {
        let j = try json(report())
        XCTAssertTrue(j["server_requests"] is NSNull, "unknown without a server count")
        for key in ["killed_replica", "killed_at_ms", "ejected_after_kill_ms", "errors_before_ejection", "errors_after_ejection"] {
            XCTAssertNil(j[key], key)
        }
        XCTAssertFalse(report().text().contains("failover"))
    }

    func testServerRequestsAndFailover() throws {
        var r = report()
        r.serverRequests = 1_234
        r.failover = BenchFailover(replica: 2, killedAtNanos: 3_000_250_000, ejectedAfterKillNanos: 2_479_000,
                                   errorsBeforeEjection: 8, errorsAfterEjection: 0)
        let j = try json(r)
        XCTAssertEqual(j["server_requests"] as? Int, 1_234)
        XCTAssertEqual(j["killed_replica"] as? Int, 2)
        XCTAssertEqual(j["killed_at_ms"] as? Double, 3_000.25)
        XCTAssertEqual(j["ejected_after_kill_ms"] as? Double, 2.479)
        XCTAssertEqual(j["errors_before_ejection"] as? Int, 8)
        XCTAssertEqual(j["errors_after_ejection"] as? Int, 0)
        let text = r.text()
        XCTAssertTrue(text.contains("servers     1234 requests received (1.234 x offered)"), text)
        XCTAssertTrue(text.contains("replica 2 killed at 3.000 s, ejected 2.5 ms later; failed requests 8 before the ejection, 0 after"),
                      text)
    }

    func testKillWithoutEjectionOrBeforeTheKill() throws {
        var r = report()
        r.failover = BenchFailover(replica: 1, killedAtNanos: 500_000_000, errorsBeforeEjection: 3)
        let j = try json(r)
        XCTAssertEqual(j["killed_at_ms"] as? Double, 500)
        XCTAssertTrue(j["ejected_after_kill_ms"] is NSNull)
        XCTAssertTrue(r.text().contains("killed at 0.500 s, not ejected"), r.text())
        r.failover = BenchFailover(replica: 1)
        XCTAssertTrue(try json(r)["killed_at_ms"] is NSNull)
        XCTAssertTrue(r.text().contains("replica 1 not killed: the phase ended first"), r.text())
    }
}
