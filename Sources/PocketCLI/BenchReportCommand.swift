import ArgumentParser
import PocketBenchKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `pocket bench report RESULTS.json… --out FILE.html`: the HTML report of
/// `pocket bench --report`, from the JSON of earlier runs (`--json` output,
/// the peers and scaling scripts' results, docs/results/*.json); files of
/// several clients draw side by side. `--svg-dir DIR` also writes each chart
/// as a standalone SVG file (how scripts/bench-charts.sh makes docs/charts).
struct BenchReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "An HTML report (and SVG charts) from the JSON of benchmark runs.")

    @Argument(help: ArgumentHelp("Results: JSON lines of runs (`pocket bench --json`), a JSON array of runs, or {\"runs\": [...]}; - for stdin.",
                                 valueName: "results.json"))
    var files: [String]

    @Option(help: ArgumentHelp("The HTML report to write.", valueName: "file.html"))
    var out: String?

    @Option(name: .customLong("svg-dir"), help: ArgumentHelp("Also write every chart as DIR/<scenario>-<chart>.svg.", valueName: "dir"))
    var svgDir: String?

    @Option(help: "The report's title (default: the files' own, or \"Pocket benchmark report\").")
    var title: String?

    func validate() throws {
        if files.isEmpty { throw ValidationError("give one or more results files") }
        if out == nil && svgDir == nil { throw ValidationError("give --out FILE.html, --svg-dir DIR or both") }
    }

    func run() throws {
        var parts: [BenchResults] = []
        for file in files {
            guard let text = readWhole(file) else {
                Output.diagnostic("pocket bench report: cannot read \(file): \(String(cString: strerror(errno)))\n")
                throw ExitCode(1)
            }
            do {
                parts.append(try BenchResults.parse(text, name: file))
            } catch {
                Output.diagnostic("pocket bench report: \(error.description)\n")
                throw ExitCode(1)
            }
        }
        var results = BenchResults.merged(parts)
        if let title { results.title = title }
        try Self.write(results, html: out, svgDir: svgDir)
    }

    /// Writes the report to `html` and each chart into `svgDir` (either may be nil).
    static func write(_ results: BenchResults, html: String?, svgDir: String?) throws {
        do throws(CLIFailure) {
            if let html { try writeWhole(html, HTMLReport(results).render()) }
            if let svgDir {
                if mkdir(svgDir, 0o755) != 0 && errno != EEXIST {
                    throw CLIFailure(.localWrite, "cannot create \(svgDir): \(String(cString: strerror(errno)))")
                }
                for chart in ResultCharts(results).charts { try writeWhole(svgDir + "/" + chart.fileName, chart.svg) }
            }
        } catch {
            Output.diagnostic("pocket bench report: \(error.message)\n")
            throw ExitCode(1)
        }
    }
}

/// The whole file as UTF-8 text ("-": stdin), or nil with errno set.
private func readWhole(_ path: String) -> String? {
    let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { if fd > 0 { close(fd) } }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n < 0 { return nil }
        if n == 0 { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

private func writeWhole(_ path: String, _ text: String) throws(CLIFailure) {
    let file = try OutputFile(path: path)
    defer { file.close() }
    try file.output.write(text)
}
