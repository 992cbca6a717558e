import ArgumentParser
import PocketBench
import PocketBenchKit

/// `pocket bench`: without `--url`, the standard scenarios (13 B, 64 KiB,
/// 1 MiB, gzip text, TLS, a 1 MiB upload) against in-process loopback
/// servers at 1 and 64 connections; with `--url`, that server. The same code
/// as `pocket-bench` (PocketBench, PocketBenchKit). `--report FILE.html`
/// draws the runs; `pocket bench report` draws saved `--json` output.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmark Pocket: standard scenarios on loopback, or --url.",
        subcommands: [BenchReportCommand.self])

    @Option(help: "The server to load; without it, the standard scenarios run against embedded servers.")
    var url: String?

    @Option(help: "Measured requests per run (default: 100000 with --url; per scenario, a few seconds' worth).")
    var requests: Int?

    @Option(help: "Concurrent requests (and pool size); default 64 with --url, 1 and 64 for the scenarios.")
    var connections: Int?

    @Option(help: "Unmeasured requests first (default max(1000, 16*C) with --url; max(2*C, 100) per scenario).")
    var warmup: Int?

    @Option(name: .customLong("max-seconds"), help: "End each measured phase after this many seconds (scenarios: 3 by default).")
    var maxSeconds: Double?

    @Flag(help: "One JSON object per run (requests errors elapsed_s rps p50_us p90_us p99_us p999_us cpu_s bytes ...).")
    var json = false

    @Option(name: .customLong("report"),
            help: ArgumentHelp("Also write an HTML report of the runs (charts inline, no scripts) to this file.",
                               valueName: "file.html"))
    var reportFile: String?

    @Option(help: "Trust this CA (PEM) for an https --url.")
    var cacert: String?

    @Flag(name: [.customShort("k"), .long], help: "No certificate verification for an https --url.")
    var insecure = false

    @Flag(help: "Ask for gzip/deflate and decode (the gzip scenario always does).")
    var compressed = false

    @Flag(help: "Engage the whole request path: a middleware adding a header, a retry policy and a live events() subscription.")
    var pipeline = false

    func validate() throws {
        if let requests, requests < 1 { throw ValidationError("--requests must be at least 1") }
        if let connections, connections < 1 { throw ValidationError("--connections must be at least 1") }
        if let warmup, warmup < 0 { throw ValidationError("--warmup must be 0 or more") }
        if let maxSeconds, !(maxSeconds > 0) { throw ValidationError("--max-seconds must be more than 0") }
    }

    mutating func run() async throws {
        var options = BenchOptions()
        options.url = url
        if let requests { options.requests = requests }
        options.warmup = warmup
        options.maxSeconds = maxSeconds
        options.json = json
        options.caFile = cacert
        options.insecure = insecure
        options.compressed = compressed
        options.pipeline = pipeline

        var failed = false
        var reports: [Report] = []
        var runs: [String] = [] // each run's JSON, as printed with --json
        do {
            if url != nil {
                options.connections = connections ?? 64
                failed = report(try await PocketBenchmark.run(options), into: &reports, &runs)
            } else {
                for scenario in BenchScenario.standard {
                    for c in connections.map({ [$0] }) ?? [1, 64] {
                        options.connections = c
                        let m = try await scenario.run(options, requestsGiven: requests != nil)
                        failed = report(m, into: &reports, &runs) || failed
                    }
                }
                if !json { try? Output.stdout.write(Self.summary(reports)) }
            }
        } catch let error as PocketBenchmark.Failure {
            Output.diagnostic("pocket bench: \(error.description)\n")
            throw ExitCode(error.exitCode)
        }
        if let reportFile {
            // Through the JSON, so the report of a run and `report` of its --json are one drawing.
            do {
                let results = try BenchResults.parse(runs.joined(separator: "\n"), name: "this run")
                try BenchReportCommand.write(results, html: reportFile, svgDir: nil)
            } catch let error as BenchResults.FormatError {
                Output.diagnostic("pocket bench: \(error.description)\n")
                throw ExitCode(1)
            }
        }
        if failed { throw ExitCode(1) }
    }

    /// One line per run: the table at the end of the scenarios' text output.
    static func summary(_ reports: [Report]) -> String {
        var s = "| scenario | c | req/s | p50 µs | p99 µs | p99.9 µs | CPU µs/req | MB/s | errors |\n"
        s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for r in reports {
            let cells = [r.scenario ?? "-", String(r.connections), fmt(r.rps, 0), fmt(r.percentileMicros(0.5), 1),
                         fmt(r.percentileMicros(0.99), 1), fmt(r.percentileMicros(0.999), 1),
                         fmt(r.cpuMicrosPerRequest, 2), fmt(r.bytesPerSecond / 1e6, 1), String(r.tally.errors)]
            s += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return s
    }

    /// Prints one run and keeps its report and JSON; true when every request of it failed.
    private func report(_ m: Measurement, into reports: inout [Report], _ runs: inout [String]) -> Bool {
        reports.append(m.report)
        runs.append(m.report.json())
        try? Output.stdout.write((json ? runs.last! : m.report.text() + "\n") + "\n")
        if let e = m.firstError { Output.diagnostic("pocket bench: first error: \(e)\n") }
        return m.allFailed
    }
}
