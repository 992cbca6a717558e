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
struct BenchReportCommand {
    var files: [String] = []
    var out: String?
    var svgDir: String?
    var title: String?

    static let usage = """
        OVERVIEW: An HTML report (and SVG charts) from the JSON of benchmark runs.

        USAGE: pocket bench report <results.json> ... [--out file.html] [--svg-dir dir] [--title title]

          <results.json>       JSON lines of runs (`pocket bench --json`), a JSON array of runs,
                               or {"runs": [...]}; - for stdin
          --out FILE.html      the HTML report to write
          --svg-dir DIR        also write every chart as DIR/<scenario>-<chart>.svg
          --title TITLE        the report's title (default: the files' own, or
                               "Pocket benchmark report")

        """

    /// The command for `arguments` (after `pocket bench report`); nil after
    /// printing the usage for `--help`.
    static func parse(_ arguments: ArraySlice<String>) throws(CLIFailure) -> BenchReportCommand? {
        var command = BenchReportCommand()
        var rest = arguments
        func value(_ name: String, _ inline: String?) throws(CLIFailure) -> String {
            if let inline { return inline }
            guard let v = rest.popFirst() else { throw CLIFailure(.usage, "bench report: \(name) needs a value") }
            return v
        }
        while let a = rest.popFirst() {
            let (name, inline): (String, String?) = a.hasPrefix("--") && a.contains("=")
                ? (String(a.prefix { $0 != "=" }), String(a.drop { $0 != "=" }.dropFirst())) : (a, nil)
            switch name {
            case "-h", "--help":
                try? Output.stdout.write(usage)
                return nil
            case "--out": command.out = try value(name, inline)
            case "--svg-dir": command.svgDir = try value(name, inline)
            case "--title": command.title = try value(name, inline)
            default:
                if a.hasPrefix("-") && a != "-" { throw CLIFailure(.usage, "bench report: unknown option \(a)") }
                command.files.append(a)
            }
        }
        if command.files.isEmpty { throw CLIFailure(.usage, "bench report: give one or more results files") }
        if command.out == nil && command.svgDir == nil {
            throw CLIFailure(.usage, "bench report: give --out FILE.html, --svg-dir DIR or both")
        }
        return command
    }

    /// Reads the files and writes the report; returns the exit status.
    func run() -> Int32 {
        var parts: [BenchResults] = []
        for file in files {
            guard let text = readWhole(file) else {
                Output.diagnostic("pocket bench report: cannot read \(file): \(String(cString: strerror(errno)))\n")
                return 1
            }
            do {
                parts.append(try BenchResults.parse(text, name: file))
            } catch {
                Output.diagnostic("pocket bench report: \(error.description)\n")
                return 1
            }
        }
        var results = BenchResults.merged(parts)
        if let title { results.title = title }
        return Self.write(results, html: out, svgDir: svgDir) ?? 0
    }

    /// Writes the report to `html` and each chart into `svgDir` (either may
    /// be nil); nil when done, else the exit status of the failure.
    static func write(_ results: BenchResults, html: String?, svgDir: String?) -> Int32? {
        do throws(CLIFailure) {
            if let html { try writeWhole(html, HTMLReport(results).render()) }
            if let svgDir {
                if mkdir(svgDir, 0o755) != 0 && errno != EEXIST {
                    throw CLIFailure(.localWrite, "cannot create \(svgDir): \(String(cString: strerror(errno)))")
                }
                for chart in ResultCharts(results).charts { try writeWhole(svgDir + "/" + chart.fileName, chart.svg) }
            }
            return nil
        } catch {
            Output.diagnostic("pocket bench report: \(error.message)\n")
            return error.status.code
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
