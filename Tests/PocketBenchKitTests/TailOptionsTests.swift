import PocketBenchKit
import XCTest

/// The fixed-rate, replica and tail-policy flags of `BenchOptions.parse`:
/// values read, and every bad value or combination refused with a message
/// that names the flag.
final class TailOptionsTests: XCTestCase {
    private func parse(_ args: String) throws -> BenchOptions {
        try BenchOptions.parse(args.split(separator: " ").map(String.init)[...])
    }

    private func assertRefused(_ args: String, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try parse(args), args, file: file, line: line) { error in
            XCTAssertTrue(String(describing: error).contains(fragment), "\(args): \(error)", file: file, line: line)
        }
    }

    func testValuesRead() throws {
        let o = try parse("--rate 2_500 --replicas 3 --slow-replica 2:0.05:50ms --slow-replica 3:10%:1.5s "
            + "--hedge-after p95 --max-hedges 2 --balance p2c --retry-budget 20% --eject-after 5 --deadline 100ms")
        XCTAssertEqual(o.rate, 2_500)
        XCTAssertEqual(o.tail.replicas, 3)
        XCTAssertEqual(o.tail.slowReplicas, [.init(index: 2, share: 0.05, delay: .milliseconds(50)),
                                             .init(index: 3, share: 0.1, delay: .milliseconds(1_500))])
        XCTAssertEqual(o.tail.hedgeAfter, .percentile(95))
        XCTAssertEqual(o.tail.maxHedges, 2)
        XCTAssertEqual(o.tail.balance, .p2c)
        XCTAssertEqual(o.tail.retryBudgetPercent, 20)
        XCTAssertEqual(o.tail.ejectAfter, 5)
        XCTAssertEqual(o.tail.deadline, .milliseconds(100))
        XCTAssertEqual(o.tail.policyFlags, ["--hedge-after", "--max-hedges", "--balance p2c", "--retry-budget",
                                            "--eject-after", "--deadline"])
        XCTAssertEqual(try parse("--hedge-after=250us").tail.hedgeAfter, .after(.microseconds(250)))
        XCTAssertEqual(try parse("--hedge-after p99.9").tail.hedgeAfter, .percentile(99.9))
        XCTAssertEqual(try parse("--deadline 800ns").tail.deadline, .nanoseconds(800))
    }

    func testFaultFlagsRead() throws {
        let o = try parse("--replicas 3 --kill-replica 2:3 --failing-replica 1:503 --failing-replica 3:500 --retries 2 "
            + "--retry-budget off")
        XCTAssertEqual(o.tail.killReplica, .init(index: 2, after: .seconds(3)))
        XCTAssertEqual(o.tail.failingReplicas, [.init(index: 1, status: 503), .init(index: 3, status: 500)])
        XCTAssertEqual(o.tail.retries, 2)
        XCTAssertTrue(o.tail.retryBudgetOff)
        XCTAssertNil(o.tail.retryBudgetPercent)
        XCTAssertEqual(o.tail.policyFlags, ["--retry-budget", "--retries"])
        XCTAssertEqual(try parse("--replicas 2 --kill-replica 2:500ms").tail.killReplica, .init(index: 2, after: .milliseconds(500)))
        XCTAssertEqual(try parse("--replicas 2 --kill-replica 1:2.5").tail.killReplica, .init(index: 1, after: .milliseconds(2_500)))
        let budget = try parse("--retry-budget off --retry-budget 10").tail
        XCTAssertFalse(budget.retryBudgetOff, "the last one given")
        XCTAssertEqual(budget.retryBudgetPercent, 10)
    }

    func testBadFaultFlagsRefused() {
        assertRefused("--replicas 3 --kill-replica 2", "--kill-replica: expected K:T")
        assertRefused("--replicas 3 --kill-replica 0:1s", "the replica K is a number from 1")
        assertRefused("--replicas 3 --kill-replica 2:-1", "the time T is 0 to 3600 seconds")
        assertRefused("--replicas 3 --kill-replica 2:soon", "--kill-replica: expected a duration")
        assertRefused("--replicas 2 --kill-replica 3:1s", "--kill-replica 3: there are 2 replicas")
        assertRefused("--replicas 3 --failing-replica 2", "--failing-replica: expected K:STATUS")
        assertRefused("--replicas 3 --failing-replica 2:200", "a failure status from 400 to 599")
        assertRefused("--replicas 3 --failing-replica 2:600", "a failure status from 400 to 599")
        assertRefused("--replicas 3 --failing-replica 2:503 --failing-replica 2:500", "replica 2 given twice")
        assertRefused("--failing-replica 2:503", "--failing-replica 2: there is 1 replica")
        assertRefused("--url http://a/ --kill-replica 1:1s", "act on embedded replicas")
        assertRefused("--retries 11", "--retries: expected retries per request from 0 to 10")
        assertRefused("--retry-budget none", "--retry-budget: expected a percentage")
    }

    func testDefaults() throws {
        let o = try parse("")
        XCTAssertNil(o.rate)
        XCTAssertNil(o.offered)
        XCTAssertEqual(o.tail, TailOptions())
        XCTAssertEqual(o.tail.replicas, 1)
        XCTAssertEqual(o.tail.balance, .roundRobin)
        XCTAssertEqual(o.tail.policyFlags, [])
    }

    func testURLsAreReplicas() throws {
        let o = try parse("--url http://a:1/ --url http://b:2/ --url=http://c:3/")
        XCTAssertEqual(o.urls, ["http://a:1/", "http://b:2/", "http://c:3/"])
        XCTAssertEqual(o.url, "http://a:1/")
    }

    func testOffered() throws {
        XCTAssertEqual(try parse("--rate 1000").offered, 10_000, "10 s by default")
        XCTAssertEqual(try parse("--rate 1000 --max-seconds 2").offered, 2_000)
        XCTAssertEqual(try parse("--rate 1000 --requests 500").offered, 500)
        XCTAssertEqual(try parse("--rate 1000 --requests 5000 --max-seconds 2").offered, 2_000, "the smaller")
    }

    func testBadValuesRefused() {
        assertRefused("--rate 0", "--rate: expected requests per second > 0")
        assertRefused("--rate fast", "--rate")
        assertRefused("--rate", "--rate needs a value")
        assertRefused("--replicas 0", "--replicas: expected a number of embedded servers from 1 to 64")
        assertRefused("--replicas 65", "--replicas")
        assertRefused("--slow-replica 2:0.05", "--slow-replica: expected K:P:DELAY")
        assertRefused("--replicas 3 --slow-replica 0:0.05:50ms", "the replica K is a number from 1")
        assertRefused("--replicas 3 --slow-replica 2:0:50ms", "the share P must be above 0")
        assertRefused("--replicas 3 --slow-replica 2:1.5:50ms", "the share P must be above 0 and at most 1")
        assertRefused("--replicas 3 --slow-replica 2:half:50ms", "the share P is a fraction")
        assertRefused("--replicas 3 --slow-replica 2:0.05:50", "--slow-replica: expected a duration > 0 with its unit")
        assertRefused("--replicas 3 --slow-replica 2:0.05:2m", "--slow-replica: expected a duration")
        assertRefused("--replicas 3 --slow-replica 2:0.05:61s", "the delay is at most 60s")
        assertRefused("--replicas 3 --slow-replica 2:0.05:5ms --slow-replica 2:0.1:5ms", "replica 2 given twice")
        assertRefused("--slow-replica 2:0.05:50ms", "--slow-replica 2: there is 1 replica")
        assertRefused("--replicas 2 --slow-replica 3:0.05:50ms", "there are 2 replicas")
        assertRefused("--url http://a/ --replicas 3", "against real servers give --url once per replica")
        assertRefused("--url http://a/ --slow-replica 1:0.05:50ms", "put a delaying proxy in front of one")
        assertRefused("--hedge-after p100", "--hedge-after: expected a percentile")
        assertRefused("--hedge-after p0", "--hedge-after: expected a percentile")
        assertRefused("--hedge-after 10", "--hedge-after: expected a duration > 0 with its unit")
        assertRefused("--hedge-after 0ms", "--hedge-after: expected a duration > 0")
        assertRefused("--hedge-after 10ms --max-hedges 0", "--max-hedges: expected extra attempts per request from 1 to 16")
        assertRefused("--max-hedges 2", "--max-hedges needs --hedge-after")
        assertRefused("--balance random", "--balance: expected round-robin or p2c")
        assertRefused("--retry-budget 101", "--retry-budget: expected a percentage from 0 to 100")
        assertRefused("--retry-budget -1%", "--retry-budget: expected a percentage")
        assertRefused("--eject-after 0", "--eject-after: expected consecutive failures >= 1")
        assertRefused("--deadline soon", "--deadline: expected a duration")
        assertRefused("--deadline 2h", "--deadline: expected a duration")
        assertRefused("--rate 100 --soak 3", "--rate and --soak: one or the other")
    }
}
