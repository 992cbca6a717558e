import Foundation
import PocketBenchKit
import XCTest

/// The charts checked into docs/charts: each directory is exactly what
/// scripts/bench-charts.sh draws from docs/results/NAME.json (so they match
/// the JSON they came from), and each draws.
final class DocsChartsTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func resultsFiles() throws -> [URL] {
        let dir = root.appendingPathComponent("docs/results")
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }
    }

    func testCheckedInChartsAreDrawnFromTheirResults() throws {
        let files = try resultsFiles()
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let name = file.deletingPathExtension().lastPathComponent
            let results = try BenchResults.parse(try String(contentsOf: file, encoding: .utf8), name: file.lastPathComponent)
            let charts = ResultCharts(results).charts
            let dir = root.appendingPathComponent("docs/charts/\(name)")
            let present = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".svg") }
            XCTAssertEqual(Set(present), Set(charts.map(\.fileName)), "\(name): run scripts/bench-charts.sh")
            for chart in charts {
                let checkedIn = try? String(contentsOf: dir.appendingPathComponent(chart.fileName), encoding: .utf8)
                XCTAssertEqual(checkedIn, chart.svg, "docs/charts/\(name)/\(chart.fileName) is stale: run scripts/bench-charts.sh")
                let svg = try XMLTree.parse(chart.svg)
                XCTAssertEqual(svg["data-scenario"], chart.scenario)
                XCTAssertEqual(svg.all(class: "axis-label").count, 2, chart.fileName)
                try SVGRenderer.render(chart.svg, name: "docs/charts/\(name)/\(chart.fileName)")
            }
            // Every run's client is drawn in its scenario's requests/s chart
            // (a fixed-rate scenario's latency chart: it has no requests/s one).
            for (scenario, groups) in results.scenarios {
                let main = try XCTUnwrap(charts.first { $0.scenario == scenario && $0.kind == "rps" }
                    ?? charts.first { $0.scenario == scenario && $0.kind == "latency" })
                let drawn = Set(try XMLTree.parse(main.svg).all(class: "series").compactMap { $0["data-series"] })
                if main.kind == "rps" {
                    XCTAssertEqual(drawn, Set(groups.map(\.displayName)), "\(name)/\(scenario)")
                } else {
                    XCTAssertEqual(drawn, Set(groups.map(\.seriesName)), "\(name)/\(scenario)")
                }
            }
        }
    }

    func testPeersChartsShowThePublishedMedians() throws {
        // The charts and the page's table come from one run: every bar of
        // the requests/s chart is the median docs/BENCHMARKS.md prints in
        // its generated "peers" block (scripts/bench-page.py).
        let file = root.appendingPathComponent("docs/results/peers.json")
        let results = try BenchResults.parse(try String(contentsOf: file, encoding: .utf8))
        let rps = try XCTUnwrap(ResultCharts(results).charts.first { $0.fileName == "plain-http-rps.svg" })
        var drawn: [String: Double] = [:]
        for series in try XMLTree.parse(rps.svg).all(class: "series") {
            for bar in series.all(class: "bar") {
                drawn["\(Self.tableLabel(series["data-series"]!))/\(bar["data-category"]!)"] = Double(bar["data-value"]!)
            }
        }
        let published = try publishedPeersMedians()
        XCTAssertEqual(Set(drawn.keys), Set(published.keys))
        for (key, value) in published {
            XCTAssertEqual(drawn[key] ?? 0, value, accuracy: 1, key)
        }
    }

    /// The page's client label for a chart's series name.
    private static func tableLabel(_ series: String) -> String {
        let lower = series.lowercased()
        if lower.hasPrefix("asynchttpclient") { return "ahc" }
        return String(lower.split(separator: " ").first ?? "")
    }

    /// "client/connections" -> req/s, from the first table of the page's
    /// generated peers block.
    private func publishedPeersMedians() throws -> [String: Double] {
        let page = try String(contentsOf: root.appendingPathComponent("docs/BENCHMARKS.md"), encoding: .utf8)
        let start = try XCTUnwrap(page.range(of: "<!-- results: peers -->"), "docs/BENCHMARKS.md has no peers block")
        let block = page[start.upperBound...]
        let end = try XCTUnwrap(block.range(of: "<!-- /results -->"))
        var medians: [String: Double] = [:]
        var header: [String] = []
        for line in block[..<end.lowerBound].split(separator: "\n") {
            guard line.hasPrefix("|") else {
                if !header.isEmpty { break } // the first table only
                continue
            }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if header.isEmpty { header = cells; continue }
            if cells.allSatisfy({ $0.allSatisfy { "-:".contains($0) } }) { continue }
            guard let c = header.firstIndex(of: "c"), let client = header.firstIndex(of: "client"),
                  let rps = header.firstIndex(of: "req/s"), let value = Double(cells[rps].replacingOccurrences(of: ",", with: ""))
            else { continue }
            medians["\(cells[client])/\(cells[c])"] = value
        }
        XCTAssertFalse(medians.isEmpty, "no table in the peers block")
        return medians
    }
}
