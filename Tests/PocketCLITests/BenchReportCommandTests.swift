import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PocketTestSupport
import XCTest

/// `pocket bench --report FILE.html` and `pocket bench report RESULTS.json…`:
/// the file is written, parses as XML, draws the runs, and says so when
/// requests failed (the charts themselves: PocketBenchKitTests).
final class BenchReportCommandTests: XCTestCase {
    private func wellFormed(_ html: String, file: StaticString = #filePath, line: UInt = #line) {
        let parser = XMLParser(data: Data(html.utf8))
        XCTAssertTrue(parser.parse(), "not XHTML: \(parser.parserError.map { "\($0)" } ?? "?")", file: file, line: line)
    }

    private func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    func testReportOfARun() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("chart me") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = dir.appendingPathComponent("run.html")
        let run = try PocketBinary.run(["bench", "--url", server.url("/"), "--requests", "40", "--connections", "2",
                                        "--warmup", "2", "--json", "--report", report.path])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let html = try String(contentsOf: report, encoding: .utf8)
        wellFormed(html)
        XCTAssertEqual(count("<svg ", in: html), 2, "requests/s and latency")
        XCTAssertTrue(html.contains("data-chart=\"rps\"") && html.contains("data-chart=\"latency\""))
        XCTAssertTrue(html.contains("data-series=\"Pocket c=2\""))
        XCTAssertFalse(html.contains("id=\"errors\""), "no errors, no banner")
        XCTAssertTrue(html.contains("--report"), "the command line")
        XCTAssertTrue(html.contains("pocket 0.") && html.contains("swift 6."), "the versions")

        // The --json of the same run draws the same report.
        let json = dir.appendingPathComponent("run.json")
        try run.stdout.write(to: json)
        let again = dir.appendingPathComponent("again.html"), svgs = dir.appendingPathComponent("svg")
        let redraw = try PocketBinary.run(["bench", "report", json.path, "--out", again.path, "--svg-dir", svgs.path])
        XCTAssertEqual(redraw.status, 0, redraw.stderrText)
        let strip = { (s: String) in s.split(separator: "\n").filter { !$0.contains(" UTC</dd>") }.joined(separator: "\n") }
        XCTAssertEqual(strip(try String(contentsOf: again, encoding: .utf8)), strip(html))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: svgs.path).sorted(), ["run-latency.svg", "run-rps.svg"])
    }

    func testReportOfARunWithErrorsSaysSo() throws {
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = dir.appendingPathComponent("failed.html")
        let run = try PocketBinary.run(["bench", "--url", "http://127.0.0.1:\(try closedPort())/", "--requests", "5",
                                        "--connections", "1", "--warmup", "0", "--report", report.path])
        XCTAssertEqual(run.status, 1, "every request failed")
        let html = try String(contentsOf: report, encoding: .utf8)
        wellFormed(html)
        XCTAssertTrue(html.contains("<div class=\"banner errors\" id=\"errors\" role=\"alert\">"), html)
        XCTAssertTrue(html.contains("5 failed requests"), html)
        XCTAssertTrue(html.contains("connection_refused"), html)
        XCTAssertTrue(html.contains("<td class=\"errors nonzero\">5</td>"), html)
    }

    func testReportOfSeveralFilesDrawsTheClientsSideBySide() throws {
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("pocket.json"), b = dir.appendingPathComponent("wrk.json")
        try Data(#"{"client":"pocket","connections":64,"rps":100000,"p50_us":500,"p99_us":1000}"#.utf8).write(to: a)
        try Data(#"[{"client":"wrk","connections":64,"rps":138000,"p50_us":220,"p99_us":590}]"#.utf8).write(to: b)
        let out = dir.appendingPathComponent("both.html")
        let run = try PocketBinary.run(["bench", "report", a.path, b.path, "--out", out.path, "--title", "Side by side"])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let html = try String(contentsOf: out, encoding: .utf8)
        wellFormed(html)
        XCTAssertTrue(html.contains("<h1>Side by side</h1>"))
        XCTAssertTrue(html.contains("data-series=\"Pocket\"") && html.contains("data-series=\"wrk\""))

        let bad = dir.appendingPathComponent("bad.json")
        try Data("not json\n{\"client\":true}\n".utf8).write(to: bad)
        let refused = try PocketBinary.run(["bench", "report", bad.path, "--out", out.path])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderrText.contains("bad.json:2: not a benchmark run"), refused.stderrText)
        let noOutput = try PocketBinary.run(["bench", "report", a.path])
        XCTAssertEqual(noOutput.status, 64, "usage error: " + noOutput.stderrText)
    }
}
