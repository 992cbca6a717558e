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
            // Every run's client is drawn in its scenario's requests/s chart.
            for (scenario, groups) in results.scenarios {
                let rps = try XCTUnwrap(charts.first { $0.scenario == scenario && $0.kind == "rps" })
                let drawn = try XMLTree.parse(rps.svg).all(class: "series").compactMap { $0["data-series"] }
                XCTAssertEqual(Set(drawn), Set(groups.map(\.displayName)), "\(name)/\(scenario)")
            }
        }
    }

    func testPeersChartsShowThePublishedMedians() throws {
        // docs/BENCHMARKS.md, "Peers": the medians of the run of 2026-11-25 (docs/results/peers.json).
        let file = root.appendingPathComponent("docs/results/peers.json")
        let results = try BenchResults.parse(try String(contentsOf: file, encoding: .utf8))
        let rps = try XCTUnwrap(ResultCharts(results).charts.first { $0.fileName == "plain-http-rps.svg" })
        var drawn: [String: Double] = [:]
        for series in try XMLTree.parse(rps.svg).all(class: "series") {
            for bar in series.all(class: "bar") {
                drawn["\(series["data-series"]!)/\(bar["data-category"]!)"] = Double(bar["data-value"]!)
            }
        }
        let published: [String: Double] = [
            "wrk 4.1.0/64": 119_956, "libcurl 7.88.1 (multi)/64": 63_668, "Pocket/64": 113_164,
            "AsyncHTTPClient/64": 25_492, "URLSession/64": 3_547, "wrk 4.1.0/1": 16_636,
            "libcurl 7.88.1 (multi)/1": 13_635, "Pocket/1": 13_260, "AsyncHTTPClient/1": 6_107, "URLSession/1": 3_181,
        ]
        XCTAssertEqual(Set(drawn.keys), Set(published.keys))
        for (key, value) in published {
            XCTAssertEqual(drawn[key] ?? 0, value, accuracy: 1, key)
        }
    }
}
