#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A benchmark report as one self-contained XHTML file: the charts inline as
/// SVG, a table per scenario, the machine, the versions and the command
/// lines; no script, no stylesheet or font fetched (it opens offline, and
/// parses as XML, which the tests rely on). A run with failed requests puts
/// a banner at the top and its error counts in red.
public struct HTMLReport {
    /// What the report shows.
    public var results: BenchResults

    /// The report of `results`.
    public init(_ results: BenchResults) { self.results = results }

    /// The whole XHTML document.
    public func render() -> String {
        let title = results.title ?? "Pocket benchmark report"
        let scenarios = results.scenarios
        var h = """
            <!DOCTYPE html>
            <html xmlns="http://www.w3.org/1999/xhtml" lang="en">
            <head>
            <meta charset="utf-8"/>
            <title>\(escapeXML(title))</title>
            <style>
            body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 2em auto; max-width: 800px; color: #222; }
            .banner { background: #fde2e1; border: 2px solid #c0392b; color: #8b1a10; padding: 0.8em 1em; font-weight: bold; }
            table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
            th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
            th:first-child, td:first-child { text-align: left; }
            td.errors.nonzero { color: #c0392b; font-weight: bold; }
            svg.chart { display: block; margin: 1em 0; max-width: 100%; height: auto; }
            code, pre { font-size: 0.85em; }
            </style>
            </head>
            <body>
            <h1>\(escapeXML(title))</h1>

            """
        let groups = scenarios.flatMap(\.groups)
        let failing = groups.filter { $0.failures > 0 }
        if !failing.isEmpty {
            let failed = failing.reduce(0) { $0 + $1.failures }
            h += "<div class=\"banner errors\" id=\"errors\" role=\"alert\">\n"
            h += "<p>This run had errors: \(failed) failed request\(failed == 1 ? "" : "s") in \(failing.count) of "
                + "\(groups.count) runs. Their figures measure failures, not responses.</p>\n<ul>\n"
            for g in failing {
                h += "<li>\(escapeXML(g.scenario)), \(escapeXML(g.seriesName)): \(g.failures) failed"
                    + (g.firstError.map { ", first error: " + escapeXML($0) } ?? "") + "</li>\n"
            }
            h += "</ul>\n</div>\n"
        }
        for note in results.notes ?? [] { h += "<p class=\"note\">\(escapeXML(note))</p>\n" }

        let charts = ResultCharts(results)
        for (name, groups) in scenarios {
            h += "<section class=\"scenario\" data-scenario=\"\(escapeXML(name))\">\n<h2>\(escapeXML(name))</h2>\n"
            for chart in charts.charts(scenario: name, groups: groups) { h += chart.svg }
            h += table(groups)
            h += "</section>\n"
        }
        h += about()
        h += "</body>\n</html>\n"
        return h
    }

    private func table(_ groups: [BenchResults.Group]) -> String {
        let sources = groups.flatMap(\.runs).contains { $0.source != nil }
        var t = "<table class=\"runs\">\n<tr><th>client</th><th>c</th><th>runs</th><th>req/s</th><th>p50</th><th>p99</th>"
            + "<th>p99.9</th><th>CPU µs/req</th><th>peak RSS</th><th>errors</th>\(sources ? "<th>source</th>" : "")</tr>\n"
        for g in groups {
            let curve = g.curve
            func latency(_ p: Double) -> String { curve.first { $0.percent == p }.map { latencyLabel($0.micros) } ?? "-" }
            let cpu = median(g.runs.compactMap(\.cpuUsPerReq)).map { fixedPoint($0, 2) } ?? "-"
            let rss = g.peakRSSKiB.map { fixedPoint($0 / 1024, 1) + " MiB" } ?? "-"
            let cells = [escapeXML(g.displayName), "\(g.connections)", "\(g.runs.count)", fixedPoint(g.rps, 0), latency(50),
                         latency(99), latency(99.9), cpu, rss]
            t += "<tr data-series=\"\(escapeXML(g.seriesName))\">" + cells.map { "<td>\($0)</td>" }.joined()
            t += "<td class=\"errors\(g.failures > 0 ? " nonzero" : "")\">\(g.failures)</td>"
            if sources {
                t += "<td>\(escapeXML(ordered(g.runs.compactMap(\.source)).joined(separator: "; ")))</td>"
            }
            t += "</tr>\n"
        }
        return t + "</table>\n"
    }

    /// The machine(s), the versions and the command lines the runs carry.
    private func about() -> String {
        let runs = results.runs
        var a = "<section id=\"machine\">\n<h2>Machine, versions, commands</h2>\n<dl>\n"
        let machines = ordered(runs.compactMap(\.machine)).map(\.summary)
        a += "<dt>machine</dt>\n"
        a += machines.isEmpty ? "<dd>not recorded</dd>\n" : machines.map { "<dd>\(escapeXML($0))</dd>\n" }.joined()
        var versions: [String: [String]] = [:]
        for run in runs { for (k, v) in run.versions ?? [:] { versions[k, default: []].append(v) } }
        a += "<dt>versions</dt>\n"
        a += versions.isEmpty ? "<dd>not recorded</dd>\n" : versions.keys.sorted().map { k in
            "<dd>\(escapeXML(k)) \(escapeXML(ordered(versions[k]!).joined(separator: ", ")))</dd>\n"
        }.joined()
        let commands = ordered(runs.compactMap(\.command))
        a += "<dt>command\(commands.count == 1 ? "" : "s")</dt>\n"
        a += commands.isEmpty ? "<dd>not recorded</dd>\n" : commands.map { "<dd><code>\(escapeXML($0))</code></dd>\n" }.joined()
        a += "<dt>report written</dt>\n<dd>\(utcNow())</dd>\n"
        return a + "</dl>\n</section>\n"
    }
}

/// `2026-11-25 17:54 UTC`.
func utcNow() -> String {
    var t = time(nil)
    var tm = tm()
    gmtime_r(&t, &tm)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday)) \(two(tm.tm_hour)):\(two(tm.tm_min)) UTC"
}
