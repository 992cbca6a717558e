import XCTest
@testable import Pocket

/// Power of two choices, round-robin and the peak-EWMA latency, without
/// sockets: a seeded generator and a clock given in nanoseconds.
final class ReplicaBalancingTests: XCTestCase {
    private let ms: Int64 = 1_000_000

    private func endpoints(_ n: Int) -> [PocketReplicaEndpoint] {
        (0..<n).map { PocketReplicaEndpoint(host: "10.0.0.\($0 + 1)", port: 80) }
    }

    func testPowerOfTwoNeverTakesTheCostlierOfTheTwoDrawn() {
        var generator = SplitMix64(seed: 7)
        let candidates = [
            ReplicaChoice.Candidate(index: 0, outstanding: 0, latency: 50_000_000),
            ReplicaChoice.Candidate(index: 1, outstanding: 0, latency: 1_000_000),
            ReplicaChoice.Candidate(index: 2, outstanding: 0, latency: 1_000_000),
        ]
        var counts = [0, 0, 0]
        for _ in 0..<3_000 { counts[ReplicaChoice.powerOfTwo(candidates, using: &generator)] += 1 }
        // The slow replica loses every comparison it is drawn into.
        XCTAssertEqual(counts[0], 0)
        XCTAssertGreaterThan(counts[1], 1_200)
        XCTAssertGreaterThan(counts[2], 1_200)
    }

    func testPowerOfTwoWeighsOutstandingRequestsByLatency() {
        // 3 outstanding at 1 ms cost 4 × 1.001 ms; 0 outstanding at 3 ms
        // cost 1 × 3.001 ms: the idle but slower replica is cheaper.
        let busyFast = ReplicaChoice.Candidate(index: 0, outstanding: 3, latency: 1_000_000)
        let idleSlow = ReplicaChoice.Candidate(index: 1, outstanding: 0, latency: 3_000_000)
        XCTAssertLessThan(ReplicaChoice.cost(idleSlow), ReplicaChoice.cost(busyFast))
        var generator = SplitMix64(seed: 1)
        for _ in 0..<100 { XCTAssertEqual(ReplicaChoice.powerOfTwo([busyFast, idleSlow], using: &generator), 1) }
        // With nothing measured, the outstanding count decides.
        let a = ReplicaChoice.Candidate(index: 0, outstanding: 2, latency: 0)
        let b = ReplicaChoice.Candidate(index: 1, outstanding: 1, latency: 0)
        for _ in 0..<100 { XCTAssertEqual(ReplicaChoice.powerOfTwo([a, b], using: &generator), 1) }
    }

    func testPowerOfTwoSpreadsEqualReplicasEvenly() {
        var generator = SplitMix64(seed: 42)
        let candidates = (0..<4).map { ReplicaChoice.Candidate(index: $0, outstanding: 0, latency: 1_000_000) }
        var counts = [0, 0, 0, 0]
        for _ in 0..<8_000 { counts[ReplicaChoice.powerOfTwo(candidates, using: &generator)] += 1 }
        for c in counts { XCTAssertEqual(Double(c), 2_000, accuracy: 200) }
    }

    func testPeakEWMAJumpsToAPeakAndDecaysTowardsFasterSamples() {
        var ewma = PeakEWMA(decay: .seconds(10))
        ewma.add(.milliseconds(50), at: 0)
        XCTAssertEqual(ewma.value(at: 0), 50_000_000, accuracy: 1)
        // A faster sample at once does not pull the peak down.
        ewma.add(.milliseconds(1), at: 0)
        XCTAssertEqual(ewma.value(at: 0), 50_000_000, accuracy: 1)
        // One time constant later it weighs 1 - 1/e.
        let tau: Int64 = 10_000 * ms
        ewma.add(.milliseconds(1), at: tau)
        let expected = 50_000_000 * exp(-1.0) + 1_000_000 * (1 - exp(-1.0))
        XCTAssertEqual(ewma.value(at: tau), expected, accuracy: 1)
        // Between samples it decays towards zero.
        XCTAssertEqual(ewma.value(at: 2 * tau), expected * exp(-1.0), accuracy: 1)
        // A slower sample replaces it at once.
        ewma.add(.milliseconds(80), at: 2 * tau)
        XCTAssertEqual(ewma.value(at: 2 * tau), 80_000_000, accuracy: 1)
    }

    func testRoundRobinTakesEachReplicaInTurn() {
        var state = ReplicaSetState(balancing: .roundRobin, ejection: nil, seed: 0)
        state.replace(with: endpoints(3))
        var order: [Int] = []
        for _ in 0..<7 {
            guard case .replica(let i, false) = state.choose(at: 0) else { return XCTFail("no replica") }
            order.append(i)
        }
        XCTAssertEqual(order, [0, 1, 2, 0, 1, 2, 0])
    }

    func testTheChoiceAvoidsReplicasTheRequestUsedWhileOthersRemain() {
        for balancing in [PocketBalancing.roundRobin, .powerOfTwoChoices] {
            var state = ReplicaSetState(balancing: balancing, ejection: nil, seed: 3)
            let all = endpoints(3)
            state.replace(with: all)
            for _ in 0..<200 {
                guard case .replica(let i, _) = state.choose(at: 0, avoiding: [all[0], all[2]]) else { return XCTFail() }
                XCTAssertEqual(i, 1, "\(balancing)")
            }
            // Every replica used: any of them (a fresh state: the loop above left 200 outstanding on one).
            state = ReplicaSetState(balancing: balancing, ejection: nil, seed: 3)
            state.replace(with: all)
            var seen = Set<Int>()
            for _ in 0..<200 {
                if case .replica(let i, _) = state.choose(at: 0, avoiding: all) { seen.insert(i) }
            }
            XCTAssertEqual(seen.count, 3, "\(balancing)")
        }
    }

    func testASlowReplicaGetsFewerRequestsUnderPowerOfTwo() {
        var state = ReplicaSetState(balancing: .powerOfTwoChoices, ejection: nil, seed: 11)
        let all = endpoints(3)
        state.replace(with: all)
        var counts = [0, 0, 0]
        var now: Int64 = 0
        for _ in 0..<3_000 {
            guard case .replica(let i, _) = state.choose(at: now) else { return XCTFail() }
            counts[i] += 1
            let latency: Duration = i == 0 ? .milliseconds(20) : .milliseconds(1)
            now += ms / 10
            _ = state.finish(all[i], index: i, generation: state.generation, failure: false, latency: latency, at: now)
        }
        XCTAssertLessThan(counts[0], 300, "\(counts)")
        XCTAssertEqual(state.replicas.map(\.outstanding), [0, 0, 0])
    }

    func testAListChangeKeepsTheStateOfReplicasThatStay() {
        var state = ReplicaSetState(balancing: .powerOfTwoChoices, ejection: nil, seed: 5)
        let all = endpoints(3)
        state.replace(with: all)
        guard case .replica(let i, _) = state.choose(at: 0) else { return XCTFail() }
        let before = state.generation
        XCTAssertFalse(state.replace(with: all), "the same list is no change")
        XCTAssertTrue(state.replace(with: [all[i], PocketReplicaEndpoint(host: "10.0.0.9", port: 80)]))
        XCTAssertEqual(state.replicas[0].outstanding, 1)
        XCTAssertEqual(state.replicas[1].outstanding, 0)
        // A lease from the old list is matched by its endpoint.
        _ = state.finish(all[i], index: i, generation: before, failure: false, latency: .milliseconds(1), at: 0)
        XCTAssertEqual(state.replicas[0].outstanding, 0)
        XCTAssertEqual(state.replicas[0].requests, 1)
    }

    func testAHistoryKeepsThePlacesOfItsListAndStartsAfreshOnANewList() {
        let history = ReplicaHistory()
        XCTAssertEqual(history.used(generation: 1), 0)
        history.add(index: 0, generation: 1)
        history.add(index: 2, generation: 1)
        history.add(index: 47, generation: 1)
        history.add(index: 48, generation: 1)   // beyond the places kept: not remembered
        XCTAssertEqual(history.used(generation: 1), 1 << 0 | 1 << 2 | 1 << 47)
        XCTAssertEqual(history.used(generation: 2), 0, "places of an older list mean nothing in a newer one")
        history.add(index: 1, generation: 2)
        XCTAssertEqual(history.used(generation: 2), 1 << 1, "a newer list starts afresh")
        XCTAssertEqual(history.used(generation: 1), 0)
    }

    func testTheChoiceAvoidsThePlacesInAMask() {
        for balancing in [PocketBalancing.roundRobin, .powerOfTwoChoices] {
            var state = ReplicaSetState(balancing: balancing, ejection: nil, seed: 5)
            state.replace(with: endpoints(4))
            for _ in 0..<100 {
                guard case .replica(let i, _) = state.choose(at: 0, avoiding: 0b1011) else { return XCTFail() }
                XCTAssertEqual(i, 2, "\(balancing)")
            }
        }
    }
}
