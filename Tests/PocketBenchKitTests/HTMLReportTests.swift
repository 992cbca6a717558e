import Foundation
@testable import PocketBenchKit
import XCTest

/// HTMLReport: well-formed XHTML with the charts inline, one section per
/// scenario, the machine, versions and commands, nothing fetched, and a
/// visible banner when a run had errors.
final class HTMLReportTests: XCTestCase {
    private func report(_ text: String) throws -> (String, XMLTree) {
        let html = HTMLReport(try Fixture.results(text)).render()
        return (html, try XMLTree.parse(html))
    }

    func testOneSectionPerScenarioWithItsCharts() throws {
        let (_, page) = try report(Fixture.peers)
        XCTAssertEqual(page.name, "html")
        let sections = page.all(class: "scenario")
        XCTAssertEqual(sections.map { $0["data-scenario"] }, ["13B", "tls"])
        for section in sections {
            let charts = section.all("svg")
            XCTAssertEqual(charts.map { $0["data-chart"] }, ["rps", "latency"], section["data-scenario"]!)
            XCTAssertTrue(charts.allSatisfy { $0["data-scenario"] == section["data-scenario"] })
        }
        let rows = sections[0].all("tr").compactMap { $0["data-series"] }
        XCTAssertEqual(rows, ["Pocket c=1", "Pocket c=64", "wrk c=64", "libcurl c=64"])
        XCTAssertTrue(page.all(class: "banner").isEmpty, "no errors, no banner")
    }

    func testMachineVersionsAndCommandAreShown() throws {
        let (_, page) = try report(Fixture.peers)
        let about = try XCTUnwrap(page.all("section").first { $0["id"] == "machine" }).allText
        for expected in ["2 CPUs, AMD EPYC, Linux 6.18.44", "pocket 0.1", "swift 6.3", "wrk 4.1.0", "nginx 1.22.1",
                         "pocket-bench --url http://127.0.0.1:18085/ --connections 1 --json"] {
            XCTAssertTrue(about.contains(expected), "\(expected) in \(about)")
        }
    }

    func testSelfContained() throws {
        let (html, page) = try report(Fixture.peers + "\n" + Fixture.scaling)
        XCTAssertTrue(page.all("script").isEmpty, "no JavaScript")
        XCTAssertTrue(page.all("link").isEmpty && page.all("img").isEmpty && page.all("iframe").isEmpty, "nothing fetched")
        XCTAssertFalse(html.contains("href=") || html.contains("src=") || html.contains("url("), "no references out")
        XCTAssertFalse(html.contains("http://www.w3.org/1999/xlink"))
    }

    func testAReportOfARunWithErrorsSaysSo() throws {
        let failing = #"{"client":"pocket","scenario":"13B","connections":1,"requests":5,"errors":5,"bad_status":0,"rps":0,"first_error":"connection_refused: connect(2) failed"}"#
        let partly = #"{"client":"pocket","scenario":"tls","connections":64,"requests":100,"errors":3,"bad_status":2,"rps":1000,"p50_us":10,"p99_us":20}"#
        let (_, page) = try report(failing + "\n" + partly)
        let banner = try XCTUnwrap(page.all(class: "banner").first, "a banner")
        XCTAssertEqual(banner["id"], "errors")
        XCTAssertEqual(banner["role"], "alert")
        let text = banner.allText
        XCTAssertTrue(text.contains("10 failed requests in 2 of 2 runs"), text)
        XCTAssertTrue(text.contains("connection_refused"), text)
        // First in the body, before any chart.
        let body = try XCTUnwrap(page.all("body").first)
        XCTAssertEqual(body.all(class: "banner").first.map { $0 === banner }, true)
        XCTAssertTrue(body.children.firstIndex { $0 === banner }! < body.children.firstIndex { $0["class"] == "scenario" }!)
        // Per scenario: the count in red in the table, and a note on the chart.
        let counts = page.all(class: "nonzero").map(\.allText)
        XCTAssertEqual(counts, ["5", "5"])
        let notes = page.all(class: "chart-note").map(\.allText)
        XCTAssertTrue(notes.contains { $0.contains("ERRORS") && $0.contains("Pocket c=1 5 failed") }, "\(notes)")
        XCTAssertTrue(notes.contains { $0.contains("Pocket c=64 5 failed") }, "\(notes)")
    }

    func testReportChartsRenderToPNG() throws {
        let (_, page) = try report(Fixture.peers)
        let html = HTMLReport(try Fixture.results(Fixture.peers)).render()
        var rest = html[...]
        var drawn = 0
        while let start = rest.range(of: "<svg "), let end = rest.range(of: "</svg>", range: start.upperBound..<rest.endIndex) {
            try SVGRenderer.render(String(rest[start.lowerBound..<end.upperBound]), name: "report chart \(drawn)")
            drawn += 1
            rest = rest[end.upperBound...]
        }
        XCTAssertEqual(drawn, page.all("svg").count)
        XCTAssertEqual(drawn, 4)
    }
}
