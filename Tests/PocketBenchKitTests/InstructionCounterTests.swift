import Foundation
@testable import PocketBenchKit
import XCTest

/// InstructionCounter: the figure it reads from a callgrind dump, and the
/// reason it gives where it cannot count; `--count` on the command line.
final class InstructionCounterTests: XCTestCase {
    private func dump(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "callgrind-\(UUID().uuidString).out"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testReadsTheTotalsLineOfADump() throws {
        let path = try dump("""
            # callgrind format
            version: 1
            creator: callgrind-3.19.0
            desc: Trigger: Client Request: send_c1
            events: Ir
            fl=(1) ???
            fn=(1) main
            0 12
            totals: 35348200
            """)
        XCTAssertEqual(InstructionCounter.callgrindTotal(path), 35_348_200)
    }

    func testReadsTheSummaryLineOfAnOlderDump() throws {
        XCTAssertEqual(InstructionCounter.callgrindTotal(try dump("events: Ir\nsummary: 77 3\n")), 77)
    }

    func testNoFigureWithoutTotalsOrFile() throws {
        XCTAssertNil(InstructionCounter.callgrindTotal(try dump("events: Ir\nfn=(1) main\n0 12\n")))
        XCTAssertNil(InstructionCounter.callgrindTotal("/nonexistent/callgrind.out.1"))
    }

    /// With a hardware counter, a window counts the instructions of a loop;
    /// without one (a virtual machine without a PMU), the reason names
    /// perf_event_open and never comes back as a count.
    func testPerfCountsOrSaysWhyNot() throws {
        switch InstructionCounter.make() {
        case .success(let counter):
            XCTAssertEqual(counter.source, .perf)
            counter.start()
            var x = 0
            for i in 0..<1_000_000 { x &+= i }
            counter.stop(label: "loop")
            XCTAssertNotEqual(x, 0)
            XCTAssertGreaterThan(try XCTUnwrap(counter.count(), counter.failure ?? ""), 1_000_000)
        case .failure(let why):
            XCTAssertTrue(why.reason.contains("perf_event_open"), why.reason)
        }
    }

    func testCountOption() throws {
        let plain = try BenchOptions.parse(["--count"], countAllowed: true)
        XCTAssertTrue(plain.count)
        XCTAssertFalse(plain.requestsGiven)
        let sized = try BenchOptions.parse(["--count", "--requests", "500"], countAllowed: true)
        XCTAssertTrue(sized.requestsGiven)
        XCTAssertEqual(sized.requests, 500)
        XCTAssertFalse(try BenchOptions.parse([]).count)
        // `pocket bench` and the peers take the same flags but do not count: an error, not a silent run.
        XCTAssertThrowsError(try BenchOptions.parse(["--count"])) { error in
            XCTAssertTrue("\(error)".contains("pocket-bench's only"), "\(error)")
        }
    }
}
