import Foundation
@testable import PocketBenchKit
import XCTest

/// Fixtures: runs as the clients and scripts write them (one JSON object a line).
enum Fixture {
    /// Two scenarios; Pocket at 1 and 64 connections (two repetitions at 64),
    /// wrk with only p50/p99, libcurl without latency, one TLS run.
    static let peers = """
        {"client":"pocket","scenario":"13B","connections":1,"requests":60000,"errors":0,"bad_status":0,"rps":11644.5,"p50_us":82.1,"p99_us":129.4,"latency_percentiles":[[0,40.2],[50,82.1],[90,101.5],[99,129.4],[99.9,310.0],[99.99,900.5],[100,1500.0]],"machine":{"cpus":2,"cpu_model":"AMD EPYC","kernel":"6.18.44"},"versions":{"pocket":"0.1","swift":"6.3"},"command":"pocket-bench --url http://127.0.0.1:18085/ --connections 1 --json"}
        {"client":"pocket","scenario":"13B","connections":64,"requests":500000,"errors":0,"rps":100000,"p50_us":530,"p99_us":1100,"latency_percentiles":[[50,530],[90,800],[99,1100],[99.9,1500]],"peak_rss_kib":30000}
        {"client":"pocket","scenario":"13B","connections":64,"requests":510000,"errors":0,"rps":104000,"p50_us":540,"p99_us":1120,"latency_percentiles":[[50,540],[90,820],[99,1120],[99.9,1700]],"peak_rss_kib":31000}
        {"client":"wrk","scenario":"13B","connections":64,"rps":138054,"p50_us":221,"p99_us":587,"versions":{"wrk":"4.1.0","nginx":"1.22.1"}}
        {"client":"libcurl","scenario":"13B","connections":64,"rps":66223,"cpu_us_per_req":15.05}
        {"client":"pocket","scenario":"tls","connections":64,"requests":400000,"errors":0,"rps":99318,"p50_us":600,"p99_us":1300}
        """

    /// Pocket and libcurl at four connection counts, with peak RSS.
    static let scaling: String = {
        var lines: [String] = []
        for (c, pocketRSS, curlRSS) in [(64, 20_000.0, 9_000.0), (256, 24_000.0, 12_000.0), (1024, 40_000.0, 24_000.0),
                                        (4096, 108_224.0, 73_512.0)] {
            lines.append(#"{"client":"pocket","scenario":"scaling","connections":\#(c),"rps":\#(90_000 - c * 10),"p99_us":\#(c * 20),"peak_rss_kib":\#(pocketRSS)}"#)
            lines.append(#"{"client":"libcurl","scenario":"scaling","connections":\#(c),"rps":\#(60_000 - c * 12),"p99_us":\#(c * 30),"peak_rss_kib":\#(curlRSS)}"#)
        }
        return lines.joined(separator: "\n")
    }()

    /// A TLS peers run as `TLS=1 scripts/bench-peers.sh --json` writes it: wrk with
    /// its note, Pocket, and URLSession left out (the script's `skipped` lines,
    /// a zero rps that must not be drawn).
    static let tlsPeers = """
        {"client":"urlsession","scenario":"TLS","connections":64,"rps":0,"skipped":"URLSession on Linux trusts only libcurl's CA bundle (/etc/ssl/certs/ca-certificates.crt), and it could not be replaced in a private mount namespace here (unshare --user --mount: Operation not permitted)"}
        {"client":"urlsession","scenario":"TLS","connections":1,"rps":0,"skipped":"URLSession on Linux trusts only libcurl's CA bundle (/etc/ssl/certs/ca-certificates.crt), and it could not be replaced in a private mount namespace here (unshare --user --mount: Operation not permitted)"}
        {"scenario":"TLS","rep":1,"connections":64,"cpu_us_per_req":9.1,"label":"wrk 4.1.0","note":"does not verify the certificate (wrk has no CA option)","command":"wrk -t1 -c64 -d5s --latency https://127.0.0.1:18443/","rps":104000,"requests":520000,"errors":0,"p50_us":300,"p90_us":500,"p99_us":800,"latency_percentiles":[[50,300],[75,400],[90,500],[99,800]],"client":"wrk"}
        {"scenario":"TLS","rep":1,"client":"pocket","connections":64,"requests":480000,"errors":0,"rps":96000,"p50_us":600,"p99_us":1300,"new_connections":64,"tls_resumed":0}
        {"scenario":"TLS","rep":1,"connections":1,"cpu_us_per_req":40.2,"label":"wrk 4.1.0","note":"does not verify the certificate (wrk has no CA option)","rps":13000,"p50_us":70,"p99_us":140,"client":"wrk"}
        {"scenario":"TLS","rep":1,"client":"pocket","connections":1,"requests":60000,"errors":0,"rps":12000,"p50_us":80,"p99_us":150}
        """

    static func results(_ text: String) throws -> BenchResults { try BenchResults.parse(text) }
}

/// ResultCharts (with BarChart and PercentileChart): one chart of each kind
/// per scenario, labelled axes, every series, the JSON's values.
final class ResultChartsTests: XCTestCase {
    private func charts(_ text: String) throws -> [(ResultCharts.Chart, XMLTree)] {
        try ResultCharts(try Fixture.results(text)).charts.map { ($0, try XMLTree.parse($0.svg)) }
    }

    func testOneRequestsChartAndOneLatencyChartPerScenario() throws {
        let all = try charts(Fixture.peers)
        XCTAssertEqual(all.map { "\($0.0.scenario)/\($0.0.kind)" }, ["13B/rps", "13B/latency", "tls/rps", "tls/latency"])
        for (chart, svg) in all {
            XCTAssertEqual(svg.name, "svg")
            XCTAssertEqual(svg["xmlns"], "http://www.w3.org/2000/svg")
            XCTAssertEqual(svg["data-chart"], chart.kind)
            XCTAssertEqual(svg["data-scenario"], chart.scenario)
            XCTAssertFalse(svg.all("title").first?.allText.isEmpty ?? true, "a title for screen readers")
        }
        XCTAssertEqual(all.map(\.0.fileName), ["13b-rps.svg", "13b-latency.svg", "tls-rps.svg", "tls-latency.svg"])
    }

    func testAxesAreLabelled() throws {
        for (chart, svg) in try charts(Fixture.peers) + charts(Fixture.scaling) {
            let labels = Dictionary(uniqueKeysWithValues: svg.all(class: "axis-label").map { ($0["data-axis"] ?? "?", $0.allText) })
            XCTAssertEqual(Set(labels.keys), ["x", "y"], chart.fileName)
            XCTAssertTrue(labels.values.allSatisfy { !$0.isEmpty }, chart.fileName)
            XCTAssertGreaterThanOrEqual(svg.all(class: "tick").count, 3, "\(chart.fileName): tick labels")
        }
        let latency = try XCTUnwrap(try charts(Fixture.peers).first { $0.0.kind == "latency" }?.1)
        XCTAssertEqual(Set(latency.all(class: "tick").map(\.allText)).isSuperset(of: ["50%", "90%", "99%", "99.9%"]), true)
    }

    func testEverySeriesIsDrawnAndInTheLegend() throws {
        let all = try charts(Fixture.peers)
        let rps = all[0].1, latency = all[1].1
        XCTAssertEqual(rps.all(class: "series").map { $0["data-series"] }, ["Pocket", "wrk", "libcurl"])
        XCTAssertEqual(rps.all(class: "legend-item").map { $0["data-series"] }, ["Pocket", "wrk", "libcurl"])
        // libcurl measured no latency: not a curve, but named in a note.
        XCTAssertEqual(latency.all(class: "series").map { $0["data-series"] }, ["Pocket c=1", "Pocket c=64", "wrk c=64"])
        XCTAssertEqual(latency.all(class: "legend-item").map { $0["data-series"] }, ["Pocket c=1", "Pocket c=64", "wrk c=64"])
        XCTAssertTrue(latency.all(class: "chart-note").contains { $0.allText.contains("libcurl c=64") })
        for series in latency.all(class: "series") {
            XCTAssertEqual(series.all("polyline").count, 1, "\(series["data-series"]!): a line")
        }
    }

    func testBarValuesAreTheMediansOfTheRuns() throws {
        let rps = try charts(Fixture.peers)[0].1
        var values: [String: [String: Double]] = [:]
        for series in rps.all(class: "series") {
            for bar in series.all(class: "bar") {
                values[series["data-series"]!, default: [:]][bar["data-category"]!] = Double(bar["data-value"]!)
            }
        }
        XCTAssertEqual(values["Pocket"], ["1": 11644.5, "64": 102_000], "c=64: the median of 100000 and 104000")
        XCTAssertEqual(values["wrk"], ["64": 138_054])
        XCTAssertEqual(values["libcurl"], ["64": 66_223])
        let tls = try charts(Fixture.peers)[2].1
        XCTAssertEqual(tls.all(class: "bar").map { Double($0["data-value"]!) }, [99_318])
    }

    func testLatencyPointsAreTheCurveOfTheJSON() throws {
        let latency = try charts(Fixture.peers)[1].1
        func points(_ name: String) -> [[Double]] {
            latency.all(class: "series").first { $0["data-series"] == name }!.all(class: "point").map {
                [Double($0["data-percent"]!)!, Double($0["data-value"]!)!]
            }
        }
        // p100 (the maximum) has no place on a 1/(1-p) axis.
        XCTAssertEqual(points("Pocket c=1"), [[0, 40.2], [50, 82.1], [90, 101.5], [99, 129.4], [99.9, 310], [99.99, 900.5]])
        XCTAssertEqual(points("Pocket c=64"), [[50, 535], [90, 810], [99, 1110], [99.9, 1600]], "point-wise medians")
        XCTAssertEqual(points("wrk c=64"), [[50, 221], [99, 587]], "p50/p99 when there is no curve")
        // Percentiles further right, latencies higher up.
        let xs = latency.all(class: "series")[0].all(class: "point").map { Double($0["cx"]!)! }
        XCTAssertEqual(xs, xs.sorted())
        XCTAssertEqual(Set(xs).count, xs.count)
    }

    func testEveryChartNamesTheDayAndTheMachineOfItsRuns() throws {
        let dated = Fixture.scaling.replacingOccurrences(
            of: #""client":"#, with: #""date":"2026-11-28","machine":{"cpus":2,"cpu_model":"AMD EPYC","kernel":"6.18.44"},"client":"#)
        let all = try charts(dated)
        XCTAssertEqual(all.map(\.0.kind), ["rps", "p99", "rss", "memory", "latency"])
        for (chart, svg) in all {
            let notes = svg.all(class: "chart-note").map(\.allText)
            XCTAssertEqual(notes.first, "measured 2026-11-28 on 2 CPUs, AMD EPYC, Linux 6.18.44", "\(chart.kind): \(notes)")
        }
        // Runs that carry neither say nothing of it.
        for (_, svg) in try charts(Fixture.scaling) {
            XCTAssertFalse(svg.all(class: "chart-note").contains { $0.allText.hasPrefix("measured") })
        }
    }

    func testScalingChartsStateMemoryPerConnection() throws {
        let all = try charts(Fixture.scaling)
        XCTAssertEqual(all.map(\.0.kind), ["rps", "p99", "rss", "memory", "latency"])
        let rss = all[2].1
        XCTAssertEqual(rss.all(class: "category").map(\.allText), ["64", "256", "1024", "4096"])
        let note = rss.all(class: "chart-note").map(\.allText).joined()
        // (108224 - 20000) / 4032 = 21.9; (73512 - 9000) / 4032 = 16.0
        XCTAssertTrue(note.contains("Pocket 21.9 KiB"), note)
        XCTAssertTrue(note.contains("libcurl 16.0 KiB"), note)
        let mib = rss.all(class: "series").first { $0["data-series"] == "Pocket" }!.all(class: "bar").map { Double($0["data-value"]!)! }
        let kib: [Double] = [20_000, 24_000, 40_000, 108_224]
        XCTAssertEqual(mib, kib.map { (($0 / 1024 * 1000).rounded()) / 1000 }, "MiB, as drawn")
        let p99 = all[1].1.all(class: "series").first { $0["data-series"] == "libcurl" }!.all(class: "bar")
        XCTAssertEqual(p99.map { Double($0["data-value"]!)! }, [1920, 7680, 30720, 122_880])
        // Per connection at each count above 64: (RSS(c) - RSS(64)) / (c - 64).
        let memory = all[3].1
        XCTAssertEqual(memory.all(class: "category").map(\.allText), ["256", "1024", "4096"])
        let perConnection = memory.all(class: "series").first { $0["data-series"] == "Pocket" }!.all(class: "bar")
            .map { Double($0["data-value"]!)! }
        let expected = [4_000.0 / 192, 20_000.0 / 960, 88_224.0 / 4032]
        XCTAssertEqual(perConnection.count, expected.count)
        for (drawn, want) in zip(perConnection, expected) { XCTAssertEqual(drawn, want, accuracy: 0.001) }
    }

    func testSkippedClientsAreNamedNotDrawnAndNotesAreStated() throws {
        let all = try charts(Fixture.tlsPeers)
        XCTAssertEqual(all.map(\.0.fileName), ["tls-rps.svg", "tls-latency.svg"])
        let rps = all[0].1, latency = all[1].1
        // URLSession's zero is not a bar: it did not run.
        XCTAssertEqual(rps.all(class: "series").map { $0["data-series"] }, ["wrk 4.1.0", "Pocket"])
        XCTAssertEqual(rps.all(class: "legend-item").map { $0["data-series"] }, ["wrk 4.1.0", "Pocket"])
        XCTAssertEqual(latency.all(class: "series").map { $0["data-series"] },
                       ["wrk 4.1.0 c=1", "wrk 4.1.0 c=64", "Pocket c=1", "Pocket c=64"])
        let rpsNotes = rps.all(class: "chart-note").map(\.allText)
        let latencyNotes = latency.all(class: "chart-note").map(\.allText)
        // Said once per client (two runs carry it), and wrapped to the chart's width.
        XCTAssertEqual(rpsNotes.filter { $0.contains("does not verify") }, ["wrk 4.1.0: does not verify the certificate (wrk has no CA option)"])
        for notes in [rpsNotes, latencyNotes] {
            let text = notes.joined(separator: " ")
            XCTAssertTrue(text.contains("not run: URLSession (c=64, c=1): URLSession on Linux trusts only libcurl's CA bundle"), text)
            XCTAssertTrue(text.contains("(unshare --user --mount: Operation not permitted)"), text)
            XCTAssertEqual(text.components(separatedBy: "not run:").count, 2, "one note for both connection counts")
            XCTAssertTrue(notes.allSatisfy { $0.count <= 95 }, "\(notes)")
        }
        XCTAssertFalse(latencyNotes.joined().contains("does not verify"), "client notes go with the requests/s chart")
        // The HTML report of the same run: no error banner for a skipped client, its notes in the charts.
        let html = try XMLTree.parse(HTMLReport(try Fixture.results(Fixture.tlsPeers)).render())
        XCTAssertTrue(html.all(class: "banner").isEmpty)
        XCTAssertTrue(html.all(class: "chart-note").contains { $0.allText.hasPrefix("not run: URLSession") })
        for (chart, _) in all { try SVGRenderer.render(chart.svg, name: chart.fileName) }
    }

    /// A fixed-rate run answers at the rate it was offered: its scenario
    /// has no requests/s chart, and its notes go with the latency chart.
    func testAFixedRateScenarioIsDrawnAsLatencyOnlyWithItsNotes() throws {
        let text = """
        {"client":"pocket","scenario":"slow replica","connections":64,"rps":5000,"offered":50000,"sent":50000,"p50_us":300,"p99_us":3000,"latency_percentiles":[[50,300],[99,3000],[99.9,9000]],"note":"p2c, hedges after p95"}
        {"client":"pocket","scenario":"slow replica","connections":64,"rps":5001,"offered":50000,"sent":50000,"p50_us":310,"p99_us":3100,"latency_percentiles":[[50,310],[99,3100],[99.9,9100]]}
        {"client":"libcurl","scenario":"slow replica","connections":64,"rps":4990,"offered":50000,"sent":49900,"p50_us":400,"p99_us":50000,"latency_percentiles":[[50,400],[99,50000],[99.9,52000]]}
        """
        let all = try charts(text)
        XCTAssertEqual(all.map(\.0.fileName), ["slow-replica-latency.svg"])
        let notes = all[0].1.all(class: "chart-note").map(\.allText).joined(separator: " ")
        XCTAssertTrue(notes.contains("Pocket: p2c, hedges after p95"), notes)
        XCTAssertTrue(notes.contains("medians of 2 repetitions"), notes)
        // One closed-loop run among them: the requests/s chart is drawn again.
        let mixed = try charts(text + "\n" + #"{"client":"wrk","scenario":"slow replica","connections":64,"rps":9000}"#)
        XCTAssertEqual(mixed.map(\.0.kind), ["rps", "latency"])
    }

    func testSkippedRunsAreNotGroupedAndNotesReadBack() throws {
        let results = try Fixture.results(Fixture.tlsPeers)
        XCTAssertEqual(results.runs.count, 6)
        XCTAssertEqual(results.runs[0].skipped?.hasPrefix("URLSession on Linux"), true)
        XCTAssertEqual(results.runs[2].note, "does not verify the certificate (wrk has no CA option)")
        let groups = try XCTUnwrap(results.scenarios.first { $0.name == "TLS" }?.groups)
        XCTAssertEqual(groups.map(\.seriesName), ["wrk 4.1.0 c=64", "Pocket c=64", "wrk 4.1.0 c=1", "Pocket c=1"])
        let skipped = results.skipped(scenario: "TLS")
        XCTAssertEqual(skipped.map(\.displayName), ["URLSession"])
        XCTAssertEqual(skipped.first?.connections, [64, 1])
        XCTAssertTrue(results.skipped(scenario: "plain HTTP").isEmpty)
        // A scenario of skipped runs only draws nothing.
        let onlySkipped = try Fixture.results(#"{"client":"urlsession","scenario":"TLS","connections":1,"rps":0,"skipped":"no CA"}"#)
        XCTAssertTrue(onlySkipped.scenarios.isEmpty)
        XCTAssertTrue(ResultCharts(onlySkipped).charts.isEmpty)
    }

    func testNotesWrapBetweenWords() {
        XCTAssertEqual(wrapped("short note"), ["short note"])
        let long = (1...40).map { "word\($0)" }.joined(separator: " ")
        let lines = wrapped(long, width: 40)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 40 }, "\(lines)")
        XCTAssertGreaterThan(lines.count, 1)
        XCTAssertTrue(lines.dropLast().allSatisfy { $0.count > 40 - 8 }, "full lines: \(lines)")
        XCTAssertEqual(lines.joined(separator: " "), long, "no word lost or split")
        XCTAssertEqual(wrapped(String(repeating: "x", count: 120), width: 40), [String(repeating: "x", count: 120)],
                       "a word longer than the line is kept whole")
    }

    func testChartsRenderToPNG() throws {
        for (chart, svg) in try charts(Fixture.peers) + charts(Fixture.scaling) + charts(Fixture.tlsPeers) {
            let size = try SVGRenderer.render(chart.svg, name: chart.fileName)
            XCTAssertEqual(size.width, Int(Double(svg["width"]!)!), chart.fileName)
            XCTAssertEqual(size.height, Int(Double(svg["height"]!)!), chart.fileName)
        }
    }

    func testJSONOfAReportReadsBack() throws {
        // What `--json` prints is what `pocket bench report` reads (the same keys).
        let line = #"{"client":"pocket","scenario":"13B","connections":1,"requests":300,"errors":2,"bad_status":1,"rps":23993.6,"p50_us":37.6,"p90_us":53.0,"p99_us":111.9,"p999_us":147.8,"max_us":147.8,"cpu_us_per_req":41.683,"peak_rss_kib":30172,"latency_percentiles":[[0.000,33.9],[50.000,37.6]],"machine":{"cpus":2,"cpu_model":"AMD EPYC","kernel":"6.18.44"},"versions":{"pocket":"0.1","swift":"6.3"},"command":"pocket bench --json","first_error":"connection_refused"}"#
        let run = try XCTUnwrap(try BenchResults.parse("some log line\n" + line + "\n").runs.first)
        XCTAssertEqual(run.failures, 3)
        XCTAssertEqual(run.curve.map(\.micros), [33.9, 37.6])
        XCTAssertEqual(run.machine?.summary, "2 CPUs, AMD EPYC, Linux 6.18.44")
        XCTAssertEqual(run.versions, ["pocket": "0.1", "swift": "6.3"])
        XCTAssertEqual(run.peakRssKib, 30172)
        XCTAssertThrowsError(try BenchResults.parse("{\"client\": 1}"))
        XCTAssertThrowsError(try BenchResults.parse("nothing here"))
    }
}
