#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One benchmark run as the JSON of `BenchReport.json()` carries it (pocket-bench,
/// `pocket bench --json`, the peers), or as a script writes it for a client
/// that does not print that JSON itself (wrk, curl-bench). Only `client`,
/// `connections` and `rps` are required; what is missing is not drawn.
public struct BenchRun: Codable, Sendable, Equatable {
    /// `"pocket"`, `"ahc"`, `"urlsession"`, `"wrk"`, `"libcurl"`.
    public var client: String
    /// The name drawn for the client (`"AsyncHTTPClient 1.37.0"`); nil: from `client`.
    public var label: String?
    /// `pocket bench`'s scenario, a script's workload (`"13B"`, `"tls"`), or nil.
    public var scenario: String?
    /// Concurrent requests (connections).
    public var connections: Int
    /// Measured requests.
    public var requests: Int?
    /// Requests that failed, and responses outside 2xx/3xx (`bad_status`).
    public var errors: Int?
    public var badStatus: Int?
    /// Successful responses per second.
    public var rps: Double
    /// Latency percentiles (µs) and the maximum, as `BenchReport.json()` names them.
    public var p50Us: Double?
    public var p90Us: Double?
    public var p99Us: Double?
    public var p999Us: Double?
    public var p9999Us: Double?
    public var maxUs: Double?
    /// A fixed-rate run's requests offered and sent (`--rate`), nil for a closed loop.
    public var offered: Int?
    public var sent: Int?
    /// Process CPU per request (µs).
    public var cpuUsPerReq: Double?
    /// Peak resident set size of the client process (KiB).
    public var peakRssKib: Double?
    /// `[percent, µs]` pairs, percent ascending (`[[50, 81.5], [90, 102.3], …]`).
    public var latencyPercentiles: [[Double]]?
    /// The first error's text, when there was one.
    public var firstError: String?
    /// Where it ran, with which versions (`"pocket"`, `"swift"`, `"nginx"`, …) and command line.
    public var machine: Machine?
    /// The day it ran, `YYYY-MM-DD` (UTC); every chart names it.
    public var date: String?
    public var versions: [String: String]?
    public var command: String?
    /// Where a transcribed figure came from (a log file and its line).
    public var source: String?
    /// What a reader should know about how this client ran (`"does not verify
    /// the certificate"`): the requests/s chart lists it beside the client.
    public var note: String?
    /// Why this client did not run here: the run is not drawn (its figures
    /// mean nothing) and its charts say it is missing, and why.
    public var skipped: String?

    /// The machine a run ran on.
    public struct Machine: Codable, Sendable, Equatable, Hashable {
        /// Online CPUs, /proc/cpuinfo's model name, the kernel release.
        public var cpus: Int?
        public var cpuModel: String?
        public var kernel: String?

        /// A machine as described.
        public init(cpus: Int?, cpuModel: String?, kernel: String?) {
            self.cpus = cpus
            self.cpuModel = cpuModel
            self.kernel = kernel
        }

        /// `2 CPUs, AMD EPYC 7B13, Linux 6.18.44`.
        public var summary: String {
            [cpus.map { "\($0) CPU\($0 == 1 ? "" : "s")" }, cpuModel, kernel.map { "Linux \($0)" }]
                .compactMap { $0 }.joined(separator: ", ")
        }
    }

    /// A run with nothing but its required figures.
    public init(client: String, scenario: String? = nil, connections: Int, rps: Double) {
        self.client = client
        self.scenario = scenario
        self.connections = connections
        self.rps = rps
    }

    /// Failed requests: errors and statuses outside 2xx/3xx.
    public var failures: Int { (errors ?? 0) + (badStatus ?? 0) }

    /// The name drawn for the client.
    public var displayName: String {
        if let label { return label }
        switch client {
        case "pocket": return "Pocket"
        case "ahc": return "AsyncHTTPClient"
        case "urlsession": return "URLSession"
        default: return client
        }
    }

    /// The latency curve: `latency_percentiles`, or failing that the fixed
    /// percentiles present (p50, p90, p99, p99.9). Empty: no latency measured.
    public var curve: [(percent: Double, micros: Double)] {
        if let l = latencyPercentiles, !l.isEmpty {
            return l.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
        }
        return [(50, p50Us), (90, p90Us), (99, p99Us), (99.9, p999Us)].compactMap { p, v in v.map { (p, $0) } }
    }
}

/// A results file: runs, and what the charts made of them should say about
/// where they came from. Read from JSON lines (one run per line: what
/// `--json` prints), a JSON array of runs, or an object
/// `{"title": …, "notes": […], "runs": […]}` (the transcribed docs/results).
public struct BenchResults: Codable, Sendable {
    /// The report's title (default: "Pocket benchmark report").
    public var title: String?
    /// Paragraphs shown before the charts: where the figures come from.
    public var notes: [String]?
    /// The runs, in the order they are drawn.
    public var runs: [BenchRun]

    /// Results as given.
    public init(title: String? = nil, notes: [String]? = nil, runs: [BenchRun]) {
        self.title = title
        self.notes = notes
        self.runs = runs
    }

    /// A file that is not results.
    public struct FormatError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Parses the text of a results file (`name` is for the error message).
    public static func parse(_ text: String, name: String = "results") throws(FormatError) -> BenchResults {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let trimmed = text.drop { $0.isWhitespace }
        do {
            if trimmed.hasPrefix("[") {
                return BenchResults(runs: try decoder.decode([BenchRun].self, from: Data(text.utf8)))
            }
            if let document = try? decoder.decode(BenchResults.self, from: Data(text.utf8)) {
                return document
            }
            var runs: [BenchRun] = []
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let l = line.drop { $0.isWhitespace }
                guard l.hasPrefix("{") else { continue } // a script's log lines between the runs
                do {
                    runs.append(try decoder.decode(BenchRun.self, from: Data(l.utf8)))
                } catch {
                    throw FormatError(description: "\(name):\(n + 1): not a benchmark run: \(error)")
                }
            }
            if runs.isEmpty { throw FormatError(description: "\(name): no benchmark runs in it") }
            return BenchResults(runs: runs)
        } catch let e as FormatError {
            throw e
        } catch {
            throw FormatError(description: "\(name): \(error)")
        }
    }

    /// Runs of one client at one connection count in one scenario, merged:
    /// the median of each figure over the repetitions (as the scripts' tables),
    /// failures summed.
    public struct Group: Sendable {
        /// What the runs share.
        public var scenario: String
        public var client: String
        public var displayName: String
        public var connections: Int
        /// The repetitions.
        public var runs: [BenchRun]

        /// "Pocket c=64".
        public var seriesName: String { "\(displayName) c=\(connections)" }
        /// Medians over the runs: requests/s, p99 (µs), peak RSS (KiB).
        public var rps: Double { median(runs.map(\.rps)) ?? 0 }
        public var p99Micros: Double? { median(runs.compactMap { $0.curveValue(at: 99) }) }
        public var peakRSSKiB: Double? { median(runs.compactMap(\.peakRssKib)) }
        /// Failed requests of all the runs.
        public var failures: Int { runs.reduce(0) { $0 + $1.failures } }
        /// Measured requests of all the runs, if counted.
        public var requests: Int? {
            let r = runs.compactMap(\.requests)
            return r.isEmpty ? nil : r.reduce(0, +)
        }
        /// The first run's first error.
        public var firstError: String? { runs.lazy.compactMap(\.firstError).first }

        /// The point-wise median curve over the runs (percentiles every run has).
        public var curve: [(percent: Double, micros: Double)] {
            let curves = runs.map(\.curve).filter { !$0.isEmpty }
            guard let first = curves.first else { return [] }
            return first.compactMap { point in
                let values = curves.compactMap { c in c.first { $0.percent == point.percent }?.micros }
                return values.count == curves.count ? (point.percent, median(values)!) : nil
            }
        }
    }

    /// The groups in the order their first run appears, by scenario
    /// (skipped runs left out: see `skipped(scenario:)`).
    public var scenarios: [(name: String, groups: [Group])] {
        var order: [String] = []
        var groups: [String: [Group]] = [:]
        for run in runs where run.skipped == nil {
            let scenario = run.scenario ?? "run"
            if groups[scenario] == nil {
                order.append(scenario)
                groups[scenario] = []
            }
            if let i = groups[scenario]!.firstIndex(where: { $0.client == run.client && $0.displayName == run.displayName
                                                             && $0.connections == run.connections }) {
                groups[scenario]![i].runs.append(run)
            } else {
                groups[scenario]!.append(Group(scenario: scenario, client: run.client, displayName: run.displayName,
                                               connections: run.connections, runs: [run]))
            }
        }
        return order.map { ($0, groups[$0]!) }
    }

    /// The clients of `scenario` that did not run, each once with its
    /// connection counts and the reason, in the order they appear.
    public func skipped(scenario: String) -> [(displayName: String, connections: [Int], reason: String)] {
        var out: [(displayName: String, connections: [Int], reason: String)] = []
        for run in runs where (run.scenario ?? "run") == scenario {
            guard let reason = run.skipped else { continue }
            if let i = out.firstIndex(where: { $0.displayName == run.displayName && $0.reason == reason }) {
                if !out[i].connections.contains(run.connections) { out[i].connections.append(run.connections) }
            } else {
                out.append((run.displayName, [run.connections], reason))
            }
        }
        return out
    }

    /// Every file's runs in one set (titles and notes joined).
    public static func merged(_ parts: [BenchResults]) -> BenchResults {
        let titles = parts.compactMap(\.title)
        let notes = parts.flatMap { $0.notes ?? [] }
        return BenchResults(title: titles.isEmpty ? nil : titles.joined(separator: "; "),
                            notes: notes.isEmpty ? nil : notes, runs: parts.flatMap(\.runs))
    }
}

extension BenchRun {
    /// The latency at `percent` on the curve, if measured there.
    func curveValue(at percent: Double) -> Double? {
        curve.first { $0.percent == percent }?.micros
    }
}

/// The median (the mean of the middle two for an even count), nil when empty.
func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
