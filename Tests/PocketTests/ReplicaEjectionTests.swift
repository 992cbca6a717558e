import XCTest
@testable import Pocket

/// Outlier ejection and the breaker of each replica, without sockets: the
/// state machines driven by a fake clock (nanoseconds).
final class ReplicaEjectionTests: XCTestCase {
    private let s: Int64 = 1_000_000_000
    private let policy = PocketOutlierEjection(consecutiveFailures: 5, baseEjectionTime: .seconds(30),
                                               maxEjectionTime: .seconds(300), maxEjectedShare: 1)

    private func endpoints(_ n: Int) -> [PocketReplicaEndpoint] {
        (0..<n).map { PocketReplicaEndpoint(host: "10.0.0.\($0 + 1)", port: 80) }
    }

    /// `failures` outcomes of `failure` for replica `i`, at `now`; the changes.
    private func report(_ state: inout ReplicaSetState, _ i: Int, failure: Bool, times: Int = 1,
                        at now: Int64) -> [ReplicaSetState.Change] {
        (0..<times).map { _ in
            state.finish(state.replicas[i].endpoint, index: i, generation: state.generation, failure: failure,
                         latency: .milliseconds(1), at: now)
        }
    }

    func testConsecutiveFailuresEjectForTheBaseTime() {
        var health = ReplicaHealth()
        for _ in 0..<4 { XCTAssertEqual(health.record(failure: true, at: 0, policy: policy), .none) }
        XCTAssertEqual(health.record(failure: false, at: 0, policy: policy), .none, "a success resets the count")
        for _ in 0..<4 { XCTAssertEqual(health.record(failure: true, at: 0, policy: policy), .none) }
        XCTAssertEqual(health.record(failure: true, at: 0, policy: policy), .tripped)
        XCTAssertEqual(health.eject(at: 10 * s, policy: policy), .seconds(30))
        XCTAssertTrue(health.isOut)
        XCTAssertFalse(health.isDue(at: 40 * s - 1))
        XCTAssertTrue(health.isDue(at: 40 * s))
    }

    func testTheHalfOpenProbeRestoresOrEjectsForLonger() {
        var state = ReplicaSetState(balancing: .roundRobin, ejection: policy, seed: 0)
        let all = endpoints(2)
        state.replace(with: all)
        let changes = report(&state, 0, failure: true, times: 5, at: 0)
        XCTAssertEqual(changes.last, .ejected(all[0], for: .seconds(30)))
        // Out of rotation until due.
        for _ in 0..<10 {
            guard case .replica(let i, false) = state.choose(at: 29 * s) else { return XCTFail() }
            XCTAssertEqual(i, 1)
            _ = report(&state, 1, failure: false, at: 29 * s)
        }
        // Due: the next request is the probe, and only one.
        XCTAssertEqual(state.choose(at: 30 * s), .replica(index: 0, probe: true))
        XCTAssertEqual(state.choose(at: 30 * s), .replica(index: 1, probe: false))
        _ = report(&state, 1, failure: false, at: 30 * s)
        // The probe fails: ejected again, twice as long.
        XCTAssertEqual(report(&state, 0, failure: true, at: 31 * s), [.ejected(all[0], for: .seconds(60))])
        XCTAssertEqual(state.choose(at: 90 * s), .replica(index: 1, probe: false))
        _ = report(&state, 1, failure: false, at: 90 * s)
        XCTAssertEqual(state.choose(at: 91 * s), .replica(index: 0, probe: true))
        XCTAssertEqual(report(&state, 0, failure: false, at: 91 * s), [.restored(all[0])])
        XCTAssertFalse(state.replicas[0].health.isOut)
        XCTAssertEqual(state.replicas[0].ejections, 2)
    }

    func testEjectionsLengthenUpToTheCapAndFallBackWhileHealthy() {
        var health = ReplicaHealth()
        XCTAssertEqual(health.eject(at: 0, policy: policy), .seconds(30))
        health.beginProbe()
        XCTAssertEqual(health.record(failure: true, at: 30 * s, policy: policy), .reejected(.seconds(60)))
        health.beginProbe()
        XCTAssertEqual(health.record(failure: false, at: 90 * s, policy: policy), .restored)
        // Healthy for one base time: the count falls from 2 to 1, so the next is the second.
        var soon = health
        XCTAssertEqual(soon.eject(at: 120 * s, policy: policy), .seconds(60))
        // Healthy for two base times: it falls to 0, so the next is a first one.
        XCTAssertEqual(health.eject(at: 150 * s, policy: policy), .seconds(30))
        // The cap.
        var stuck = ReplicaHealth()
        var last: Duration = .zero
        for _ in 0..<20 {
            last = stuck.eject(at: 0, policy: policy)
            stuck.beginProbe()
        }
        XCTAssertEqual(last, .seconds(300))
    }

    func testAtMostTheShareOfASetIsEjected() {
        let half = PocketOutlierEjection(consecutiveFailures: 1, maxEjectedShare: 0.5)
        var state = ReplicaSetState(balancing: .roundRobin, ejection: half, seed: 0)
        let all = endpoints(4)
        state.replace(with: all)
        XCTAssertEqual(report(&state, 0, failure: true, at: 0), [.ejected(all[0], for: .seconds(30))])
        XCTAssertEqual(report(&state, 1, failure: true, at: 0), [.ejected(all[1], for: .seconds(30))])
        XCTAssertEqual(report(&state, 2, failure: true, times: 3, at: 0), [.none, .none, .none])
        XCTAssertEqual(state.replicas.filter(\.health.isOut).count, 2)
        // A set of one may always eject its replica.
        XCTAssertEqual(half.maxEjected(of: 1), 1)
        XCTAssertEqual(PocketOutlierEjection(maxEjectedShare: 0).maxEjected(of: 10), 1)
    }

    func testEveryReplicaEjectedOpensTheCircuit() {
        var state = ReplicaSetState(balancing: .powerOfTwoChoices, ejection: policy, seed: 0)
        state.replace(with: endpoints(2))
        _ = report(&state, 0, failure: true, times: 5, at: 0)
        _ = report(&state, 1, failure: true, times: 5, at: 2 * s)
        XCTAssertEqual(state.choose(at: 10 * s), .circuitOpen(ejected: 2, dueIn: .seconds(20)))
        XCTAssertEqual(state.choose(at: 30 * s), .replica(index: 0, probe: true))
        XCTAssertEqual(state.choose(at: 30 * s), .circuitOpen(ejected: 2, dueIn: .seconds(2)))
    }

    func testTheErrorRateOverTheWindowEjects() {
        let rate = PocketOutlierEjection(consecutiveFailures: 100, failureRate: 0.5, window: .seconds(10),
                                         minimumRequests: 10, maxEjectedShare: 1)
        var health = ReplicaHealth()
        var changes: [ReplicaHealth.Change] = []
        for k in 0..<10 { changes.append(health.record(failure: k % 2 == 1, at: Int64(k) * s / 10, policy: rate)) }
        XCTAssertEqual(changes.dropLast(), Array(repeating: .none, count: 9))
        XCTAssertEqual(changes.last, .tripped)
        // The same failures spread over more than a window never trip.
        var spread = ReplicaHealth()
        for k in 0..<30 { XCTAssertEqual(spread.record(failure: k % 2 == 1, at: Int64(k) * 2 * s, policy: rate), .none) }
    }

    func testACancelledProbeLeavesTheReplicaDueAtOnce() {
        var state = ReplicaSetState(balancing: .roundRobin, ejection: policy, seed: 0)
        let all = endpoints(1)
        state.replace(with: all)
        _ = report(&state, 0, failure: true, times: 5, at: 0)
        XCTAssertEqual(state.choose(at: 30 * s), .replica(index: 0, probe: true))
        XCTAssertEqual(state.finish(all[0], index: 0, generation: state.generation, failure: nil, latency: .zero, at: 31 * s), .none)
        XCTAssertEqual(state.choose(at: 31 * s), .replica(index: 0, probe: true))
    }

    func testWithoutEjectionFailuresOnlyCount() {
        var state = ReplicaSetState(balancing: .roundRobin, ejection: nil, seed: 0)
        state.replace(with: endpoints(1))
        XCTAssertEqual(report(&state, 0, failure: true, times: 50, at: 0), Array(repeating: .none, count: 50))
        XCTAssertEqual(state.replicas[0].failures, 50)
        XCTAssertEqual(state.choose(at: 0), .replica(index: 0, probe: false))
    }
}
