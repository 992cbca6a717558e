import Pocket
import PocketBenchKit
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The tail-latency flags (`TailOptions`) as a Pocket client's
/// configuration: `--hedge-after`/`--max-hedges` its hedging policy,
/// `--retry-budget` its retry budget (with the default retry policy, so
/// there are retries to bound; `off`: none), `--retries N` a retry policy
/// of N + 1 attempts, `--balance p2c` and `--eject-after` a
/// replica set over the URLs (hedges of several replicas and
/// `--kill-replica` too, so that each hedge or retry goes to another
/// replica), `--deadline` each request's task
/// deadline. Counts hedges sent and won from the client's statistics (no
/// request is observed for them), and ejections from the set.
final class TailPolicies: Sendable {
    /// The replica set the requests go to, or nil: each URL in turn.
    let set: PocketReplicaSet?
    /// Each request's task deadline, or nil.
    let deadline: Duration?

    /// The set's name: the host of the one request sent to it.
    static let setName = "bench-replicas"

    /// Applies `tail` to `config`, for requests to `urls`.
    init(_ tail: TailOptions, urls: [URL], config: inout PocketClient.Configuration) throws(PocketBenchmark.Failure) {
        if let after = tail.hedgeAfter {
            let delay: PocketHedgingPolicy.Delay = switch after {
            case .after(let d): .fixed(d)
            case .percentile(let p): .percentile(p)
            }
            config.handling.hedging = PocketHedgingPolicy(delay: delay, maxHedges: tail.maxHedges ?? 1)
        }
        if let percent = tail.retryBudgetPercent {
            config.handling.retryBudget = PocketRetryBudget(percent: percent)
        } else if tail.retryBudgetOff {
            config.handling.retryBudget = nil
        }
        if let retries = tail.retries {
            config.handling.retry = PocketRetryPolicy(maxAttempts: retries + 1)
        } else if (tail.retryBudgetPercent != nil || tail.retryBudgetOff) && config.handling.retry == nil {
            config.handling.retry = PocketRetryPolicy()
        }
        deadline = tail.deadline
        if tail.balance == .p2c || tail.ejectAfter != nil || (tail.hedgeAfter != nil && urls.count > 1)
            || tail.killReplica != nil {
            do {
                set = try PocketReplicaSet(name: Self.setName, urls: urls,
                                           balancing: tail.balance == .p2c ? .powerOfTwoChoices : .roundRobin,
                                           ejection: tail.ejectAfter.map { PocketOutlierEjection(consecutiveFailures: $0) })
            } catch {
                throw .init(description: "the replicas: \(error)", exitCode: 2)
            }
            config.replicaSets = [set!]
        } else {
            set = nil
        }
    }

    /// The request every benchmark request is made from: to the set's
    /// name when there is a set (the set picks a replica in each hop),
    /// else `request` itself.
    func request(_ request: PocketRequest) -> PocketRequest {
        guard set != nil, var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else { return request }
        parts.host = Self.setName
        parts.port = nil
        guard let url = parts.url else { return request }
        var routed = request
        routed.url = url
        return routed
    }

    /// How the set spreads the requests, for the report; nil: in turn, by the benchmark.
    var balancing: String? {
        guard let set else { return nil }
        return set.balancing == .roundRobin ? "round-robin by the client's replica set" : "power of two choices"
    }

    /// The URLs the benchmark takes in turn itself: none when the set balances.
    func targets(_ urls: [URL]) -> [URL] { set == nil ? urls : [] }

    /// The counts so far, of `client`'s requests.
    func counts(of client: PocketClient) -> BenchTailCounts {
        let hedges = client.hedgeStatistics
        return BenchTailCounts(hedgesFired: hedges.sent, hedgesWon: hedges.won,
                               ejections: Int(set?.statistics.reduce(0) { $0 + $1.ejections } ?? 0))
    }
}
