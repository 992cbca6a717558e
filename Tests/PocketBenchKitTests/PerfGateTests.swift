import Foundation
import XCTest

/// scripts/perf-gate.sh against a stand-in for `pocket-bench --count` (a
/// script printing given counts): it passes within the tolerance, fails and
/// names each count that grew beyond it, fails with the reason when nothing
/// can be counted or the baseline is not comparable, and `--update` writes
/// medians, spreads and the tolerance.
final class PerfGateTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "perf-gate-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // The stand-in prints $dir/counts.json (or the next of counts.N.json) and
        // exits with $dir/status (0 without it), its reason on stderr; it
        // keeps the GLIBC_TUNABLES of its N-th run in $dir/tunables.N.
        let fake = """
            #!/usr/bin/env bash
            d=\(dir)
            n=$(cat "$d/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" >"$d/calls"
            echo "${GLIBC_TUNABLES:-}" >"$d/tunables.$n"
            if [ -f "$d/status" ]; then echo "pocket-bench --count: no hardware counter and no valgrind" >&2; exit "$(cat "$d/status")"; fi
            if [ -f "$d/counts.$n.json" ]; then cat "$d/counts.$n.json"; else cat "$d/counts.json"; fi
            """
        try fake.write(toFile: dir + "/pocket-bench", atomically: true, encoding: .utf8)
        chmod(dir + "/pocket-bench", 0o755)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func counts(send: Double, allocs: Double = 1.5, source: String = "callgrind") -> String {
        """
        {"tool": "pocket-bench --count", "instructions_source": "\(source)", "requests_per_case": 2000,
         "spin_us": 0, "io_backend": "io_uring",
         "counts": {"send_c1": {"instructions_per_req": \(send), "heap_allocs_per_req": \(allocs), "warmup": 1000},
                    "stream_c64": {"instructions_per_req": 25000.0, "heap_allocs_per_req": 7.0, "warmup": 1024}}}
        """
    }

    private func baseline(tolerance: Double = 3, source: String = "callgrind", allocs: Double = 1.5,
                          slack: Double = 0.05) throws {
        let text = """
            {"instructions_source": "\(source)", "requests_per_case": 2000, "io_backend": "io_uring",
             "tolerance_pct": \(tolerance), "allocations_slack_per_req": \(slack),
             "counts": {"send_c1": {"instructions_per_req": 1000.0, "heap_allocs_per_req": \(allocs)},
                        "stream_c64": {"instructions_per_req": 25000.0, "heap_allocs_per_req": 7.0}}}
            """
        try text.write(toFile: dir + "/baseline.json", atomically: true, encoding: .utf8)
    }

    /// Runs the gate; its status and its output (stdout and stderr).
    private func gate(_ args: [String] = [], env extra: [String: String] = [:]) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [root.appendingPathComponent("scripts/perf-gate.sh").path] + args
        var env = ProcessInfo.processInfo.environment
        env["POCKET_BENCH"] = dir + "/pocket-bench"
        env["BASELINE"] = dir + "/baseline.json"
        env.merge(extra) { _, new in new }
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testPassesWithinTheTolerance() throws {
        try baseline()
        try counts(send: 1029).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        let (status, out) = try gate()
        XCTAssertEqual(status, 0, out)
        XCTAssertTrue(out.contains("perf-gate: ok"), out)
    }

    func testFailsNamingTheCountThatGrew() throws {
        try baseline()
        try counts(send: 1050, allocs: 1.6).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        let (status, out) = try gate()
        XCTAssertEqual(status, 1, out)
        XCTAssertTrue(out.contains("FAIL: grew beyond 3.0 %: send_c1 instructions_per_req: baseline 1000.0, now 1050.0, +5.00 %"), out)
        XCTAssertTrue(out.contains("FAIL: grew beyond 3.0 %: send_c1 heap_allocs_per_req: baseline 1.5, now 1.6, +6.67 %"), out)
        XCTAssertFalse(out.contains("FAIL: grew beyond 3.0 %: stream_c64"), out)
    }

    func testAllocationsMayGrowByTheSlackAbovePercentages() throws {
        try baseline(allocs: 1.0)
        try counts(send: 1000, allocs: 1.04).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        var (status, out) = try gate()
        XCTAssertEqual(status, 0, "+4 % but 0.04 of an allocation per request: within the slack\n\(out)")
        try counts(send: 1000, allocs: 1.06).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        (status, out) = try gate()
        XCTAssertEqual(status, 1, out)
        XCTAssertTrue(out.contains("FAIL: grew beyond 3.0 %: send_c1 heap_allocs_per_req: baseline 1.0, now 1.06, +6.00 %"), out)
    }

    func testAFallReportsButPasses() throws {
        try baseline()
        try counts(send: 900).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        let (status, out) = try gate()
        XCTAssertEqual(status, 0, out)
        XCTAssertTrue(out.contains("below the baseline beyond the tolerance"), out)
    }

    func testFailsWhenNothingCanBeCounted() throws {
        try baseline()
        try "1".write(toFile: dir + "/status", atomically: true, encoding: .utf8)
        let (status, out) = try gate()
        XCTAssertEqual(status, 1, out)
        XCTAssertTrue(out.contains("no hardware counter and no valgrind"), out)
        XCTAssertTrue(out.contains("FAIL: pocket-bench --count could not count"), out)
    }

    func testFailsWithoutABaseline() throws {
        try counts(send: 1000).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        let (status, out) = try gate()
        XCTAssertEqual(status, 1, out)
        XCTAssertTrue(out.contains("FAIL: no baseline"), out)
    }

    func testFailsOnAnotherInstructionSource() throws {
        try baseline(source: "perf")
        try counts(send: 1000).write(toFile: dir + "/counts.json", atomically: true, encoding: .utf8)
        let (status, out) = try gate()
        XCTAssertEqual(status, 1, out)
        XCTAssertTrue(out.contains("instructions_source perf, this run with callgrind: not comparable"), out)
    }

    /// Three runs, then one with glibc's AVX2 and ERMS string functions
    /// masked (`send`: that run's count of send_c1).
    private func update(otherCPU send: Double) throws -> [String: Any] {
        for (i, send) in [1000.0, 1010.0, 1004.0].enumerated() {
            try counts(send: send).write(toFile: dir + "/counts.\(i + 1).json", atomically: true, encoding: .utf8)
        }
        try counts(send: send).write(toFile: dir + "/counts.4.json", atomically: true, encoding: .utf8)
        let (status, out) = try gate(["--update"], env: ["RUNS": "3"])
        XCTAssertEqual(status, 0, out)
        let tunables = try String(contentsOfFile: dir + "/tunables.4", encoding: .utf8)
        XCTAssertTrue(tunables.contains("-AVX2") && tunables.contains("-ERMS"), "the last run masks them: \(tunables)")
        XCTAssertEqual(try String(contentsOfFile: dir + "/tunables.1", encoding: .utf8), "\n", "the others do not")
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/baseline.json"))
        return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    func testUpdateWritesMediansSpreadAndTolerance() throws {
        let base = try update(otherCPU: 1005)   // shifted by 0.1 %: the spread decides
        let counts = try XCTUnwrap(base["counts"] as? [String: [String: Double]])
        XCTAssertEqual(counts["send_c1"]?["instructions_per_req"], 1004)
        let spread = try XCTUnwrap(base["spread_pct"] as? [String: [String: Double]])
        XCTAssertEqual(try XCTUnwrap(spread["send_c1"]?["instructions_per_req"]), 0.996, accuracy: 0.001)
        XCTAssertEqual(base["tolerance_pct"] as? Double, 1.99) // twice the largest spread
        XCTAssertEqual(base["allocations_slack_per_req"] as? Double, 0.05)
        XCTAssertEqual(base["runs"] as? Int, 3)
        XCTAssertEqual(base["instructions_source"] as? String, "callgrind")
    }

    func testTheToleranceCoversTheShiftOtherStringFunctionsMake() throws {
        let base = try update(otherCPU: 1024.08)   // shifted by 2.0 %: a quarter more is 2.5 %
        XCTAssertEqual(try XCTUnwrap(base["other_cpu_shift_pct"] as? Double), 2.0, accuracy: 0.001)
        XCTAssertEqual(base["tolerance_pct"] as? Double, 2.5)
        try FileManager.default.removeItem(atPath: dir + "/calls")   // the stand-in's runs counted anew
        let capped = try update(otherCPU: 1100)   // 9.6 %: at most 3
        XCTAssertEqual(capped["tolerance_pct"] as? Double, 3.0)
    }
}
