@testable import PocketBenchKit
import XCTest

/// The latency counts of a benchmark phase: buckets shared by every task,
/// turned into the same HDR histogram a list of every latency would give.
final class BenchPhaseTests: XCTestCase {
    func testBucketsAreTheHistogramsBucketing() {
        var reference = BenchPhase(limit: 1, recordsLatencies: true).histogram() // empty, 1 ns to 1 h, 3 digits
        let values: [UInt64] = [1, 2, 2047, 2048, 2049, 4095, 4096, 12_345, 999_999, 1_000_000, 123_456_789,
                                BenchPhase.highest - 1, BenchPhase.highest]
        for v in values {
            let b = BenchPhase.bucket(for: v)
            let low = BenchPhase.lowestValue(ofBucket: b)
            XCTAssertLessThanOrEqual(low, v, "\(v)")
            XCTAssertEqual(BenchPhase.bucket(for: low), b, "\(v)")
            XCTAssertTrue(reference.valuesAreEquivalent(low, v), "\(v): \(low) is another HDR bucket")
            XCTAssertLessThan(b, BenchPhase.bucketCount)
        }
        // Neighbouring buckets start where the one before ends.
        for b in 1..<BenchPhase.bucketCount {
            XCTAssertEqual(BenchPhase.bucket(for: BenchPhase.lowestValue(ofBucket: b) - 1), b - 1, "bucket \(b)")
        }
        XCTAssertEqual(BenchPhase.bucket(for: .max), BenchPhase.bucketCount - 1, "clamped to 1 h")
        XCTAssertTrue(reference.record(BenchPhase.highest), "1 h is in range")
    }

    func testHistogramHoldsEveryLatencyRecorded() {
        let phase = BenchPhase(limit: 100, recordsLatencies: true)
        var reference = BenchPhase(limit: 1, recordsLatencies: true).histogram()
        var x: UInt64 = 88_172_645_463_325_252
        for _ in 0..<50_000 {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            let ns = 1 + x % 50_000_000
            phase.record(ns)
            _ = reference.record(ns)
        }
        let h = phase.histogram()
        XCTAssertEqual(h.totalCount, 50_000)
        for p in [0.0, 50, 90, 99, 99.9, 100] {
            XCTAssertTrue(h.valuesAreEquivalent(h.valueAtPercentile(p), reference.valueAtPercentile(p)), "p\(p)")
        }
        XCTAssertEqual(BenchPhase(limit: 1, recordsLatencies: false).histogram().totalCount, 0, "warmups count nothing")
    }
}
