import PocketBench
import PocketBenchKit

/// `pocket bench`: without `--url`, the standard scenarios (13 B, 64 KiB,
/// 1 MiB, gzip text, TLS, a 1 MiB upload) against in-process loopback
/// servers at 1 and 64 connections; with `--url`, that server. The same code
/// and the same flags as `pocket-bench` (PocketBench, PocketBenchKit's
/// `BenchOptions.parse`).
struct BenchCommand: Sendable {
    var options: BenchOptions
    /// `--requests` was given (else each scenario runs its own count).
    var requestsGiven: Bool
    /// `--connections` was given (else the scenarios run at 1 and at 64).
    var connectionsGiven: Bool
    /// `--report FILE.html`: also write the HTML report of the runs.
    var reportFile: String?

    static let usage = """
        OVERVIEW: Benchmark Pocket: standard scenarios on loopback, or --url.

        Without --url: 13 B, 64 KiB, 1 MiB, gzip text, TLS and a 1 MiB upload against
        servers inside the process, at 1 and at 64 connections (--connections C: only C),
        each a few seconds' worth of requests (--requests N: N) for at most 3 s
        (--max-seconds), then a table. With --url: that server, 100000 requests at 64
        connections by default. With --rate or --replicas (and no --url): one run
        against the embedded replicas. The flags are pocket-bench's, and

          --report FILE.html   also write an HTML report of the runs (charts inline, no
                               scripts); `pocket bench report --help` draws saved --json

        """ + "\n" + BenchOptions.usage.replacing("usage: pocket-bench", with: "usage: pocket bench")

    /// The command for `arguments` (after `pocket bench`); `--help` prints
    /// the usage and exits.
    static func parse(_ all: ArraySlice<String>) throws(CLIFailure) -> BenchCommand {
        // `--report FILE` is pocket bench's own; the rest are pocket-bench's.
        var arguments: [String] = []
        var reportFile: String?
        var rest = all
        while let a = rest.popFirst() {
            if a == "--report" {
                guard let file = rest.popFirst() else { throw CLIFailure(.usage, "bench: --report needs a file name") }
                reportFile = file
            } else if a.hasPrefix("--report=") {
                reportFile = String(a.dropFirst("--report=".count))
            } else {
                arguments.append(a)
            }
        }
        var options: BenchOptions
        do {
            options = try BenchOptions.parse(arguments[...], usage: usage)
        } catch {
            throw CLIFailure(.usage, "bench: \(error) (pocket bench --help)")
        }
        // No Accept-Encoding unless --compressed (pocket-bench's nil: Pocket's default).
        options.compressed = options.compressed ?? false
        func given(_ names: String...) -> Bool {
            arguments.contains { a in names.contains { a == $0 || a.hasPrefix($0 + "=") } }
        }
        return BenchCommand(options: options, requestsGiven: given("--requests", "-n"),
                            connectionsGiven: given("--connections", "-c"), reportFile: reportFile)
    }

    /// Runs the scenarios or the --url run; returns the exit status.
    func run() async -> Int32 {
        var options = self.options
        var failed = false
        var reports: [BenchReport] = []
        var runs: [String] = [] // each run's JSON, as printed with --json
        do {
            if options.url != nil || options.rate != nil || options.tail.replicas > 1 || !options.tail.slowReplicas.isEmpty
                || !options.tail.failingReplicas.isEmpty || options.tail.killReplica != nil {
                failed = report(try await PocketBenchmark.run(options), into: &reports, &runs)
            } else {
                for scenario in BenchScenario.standard {
                    for c in connectionsGiven ? [options.connections] : [1, 64] {
                        options.connections = c
                        let m = try await scenario.run(options, requestsGiven: requestsGiven)
                        failed = report(m, into: &reports, &runs) || failed
                    }
                }
                if !options.json { try? Output.stdout.write(Self.summary(reports)) }
            }
        } catch let error as PocketBenchmark.Failure {
            Output.diagnostic("pocket bench: \(error.description)\n")
            return error.exitCode
        } catch {
            Output.diagnostic("pocket bench: \(error)\n")
            return 1
        }
        if let reportFile {
            // Through the JSON, so the report of a run and `report` of its --json are one drawing.
            do {
                let results = try BenchResults.parse(runs.joined(separator: "\n"), name: "this run")
                if let status = BenchReportCommand.write(results, html: reportFile, svgDir: nil) { return status }
            } catch {
                Output.diagnostic("pocket bench: \(error.description)\n")
                return 1
            }
        }
        return failed ? 1 : 0
    }

    /// One line per run: the table at the end of the scenarios' text output.
    static func summary(_ reports: [BenchReport]) -> String {
        var s = "| scenario | c | req/s | p50 µs | p99 µs | p99.9 µs | CPU µs/req | MB/s | errors |\n"
        s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for r in reports {
            let cells = [r.scenario ?? "-", String(r.connections), fixedPoint(r.rps, 0), fixedPoint(r.percentileMicros(0.5), 1),
                         fixedPoint(r.percentileMicros(0.99), 1), fixedPoint(r.percentileMicros(0.999), 1),
                         fixedPoint(r.cpuMicrosPerRequest, 2), fixedPoint(r.bytesPerSecond / 1e6, 1), String(r.tally.errors)]
            s += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return s
    }

    /// Prints one run and keeps its report and JSON; true when every request of it failed.
    private func report(_ m: BenchMeasurement, into reports: inout [BenchReport], _ runs: inout [String]) -> Bool {
        reports.append(m.report)
        runs.append(m.report.json())
        try? Output.stdout.write((options.json ? runs.last! : m.report.text() + "\n") + "\n")
        if let e = m.firstError { Output.diagnostic("pocket bench: first error: \(e)\n") }
        return m.allFailed
    }
}
