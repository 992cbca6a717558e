import Foundation
import PocketTestSupport
import XCTest

/// `pocket bench` and `pocket-bench` with tiny counts: they run and report
/// (the report's shape and counts; never a timing).
final class BenchCommandTests: XCTestCase {
    private func objects(_ run: PocketBinary.Run) throws -> [[String: Any]] {
        try run.stdoutText.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], String($0))
        }
    }

    func testStandardScenariosReport() throws {
        let run = try PocketBinary.run(["bench", "--requests", "20", "--warmup", "2", "--json"], timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderrText)
        let reports = try objects(run)
        let names = reports.map { "\($0["scenario"] ?? "?")@\($0["connections"] ?? "?")" }
        XCTAssertEqual(names, ["13B@1", "13B@64", "64KiB@1", "64KiB@64", "1MiB@1", "1MiB@64", "gzip-text@1", "gzip-text@64",
                               "tls@1", "tls@64", "upload-1MiB@1", "upload-1MiB@64"])
        let sizes: [String: Int] = ["13B": 13, "64KiB": 65_536, "1MiB": 1 << 20, "gzip-text": 256 << 10, "tls": 13,
                                    "upload-1MiB": 1 << 20]
        for r in reports {
            let scenario = try XCTUnwrap(r["scenario"] as? String)
            for key in ["requests", "errors", "elapsed_s", "rps", "p50_us", "p90_us", "p99_us", "p999_us", "cpu_s", "bytes"] {
                XCTAssertNotNil(r[key], "\(scenario): \(key)")
            }
            XCTAssertEqual(r["requests"] as? Int, 20, scenario)
            XCTAssertEqual(r["errors"] as? Int, 0, "\(scenario): \(r["first_error"] ?? "")")
            XCTAssertEqual(r["bytes"] as? Int, 20 * sizes[scenario]!, "\(scenario): every body counted whole (decoded for gzip)")
            XCTAssertEqual(r["latency_samples"] as? Int, 20, scenario)
        }
    }

    /// `--pipeline` sends every request through a middleware (its header
    /// reaches the server), a retry policy and a live events() subscription,
    /// and says so in the report.
    func testPipelineEngagesTheRequestPath() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("ok") }
        let run = try PocketBinary.run(["bench", "--url", server.url("/"), "--requests", "30", "--warmup", "3",
                                        "--connections", "2", "--pipeline", "--json"], timeout: 120)
        XCTAssertEqual(run.status, 0, run.stderrText)
        let report = try XCTUnwrap(try objects(run).first)
        XCTAssertEqual(report["pipeline"] as? Bool, true)
        XCTAssertEqual(report["errors"] as? Int, 0)
        XCTAssertEqual(server.requestCount, 33)
        XCTAssertEqual(Set(server.receivedRequests.map { $0.header("X-Pocket-Bench") ?? "-" }), ["pipeline"],
                       "the middleware adapted every request")
        let plain = try PocketBinary.run(["bench", "--url", server.url("/"), "--requests", "5", "--warmup", "1",
                                          "--connections", "1", "--json"], timeout: 120)
        XCTAssertEqual(try objects(plain).first?["pipeline"] as? Bool, false)
    }

    func testOneConnectionCountAndText() throws {
        let run = try PocketBinary.run(["bench", "--requests", "10", "--warmup", "1", "--connections", "2"], timeout: 300)
        XCTAssertEqual(run.status, 0, run.stderrText)
        for scenario in ["13B", "64KiB", "1MiB", "gzip-text", "tls", "upload-1MiB"] {
            XCTAssertTrue(run.stdoutText.contains("[\(scenario)] pocket"), "\(scenario) in \(run.stdoutText)")
        }
        XCTAssertTrue(run.stdoutText.contains("latency µs  p50 "), run.stdoutText)
        XCTAssertFalse(run.stdoutText.contains("connections 64"), "--connections replaces 1 and 64")
        let rows = run.stdoutText.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| scenario") }
        XCTAssertEqual(rows.map { $0.split(separator: "|").first.map { $0.trimmingCharacters(in: .whitespaces) } },
                       ["13B", "64KiB", "1MiB", "gzip-text", "tls", "upload-1MiB"], "one summary row per run")
        XCTAssertTrue(rows.allSatisfy { $0.hasSuffix("| 0 |") }, "no errors: \(rows)")
    }

    func testBenchAgainstAURL() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { _ in .text("bench me") }
        let run = try PocketBinary.run(["bench", "--url", server.url("/"), "--requests", "30", "--connections", "3",
                                        "--warmup", "3", "--json"])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let reports = try objects(run)
        XCTAssertEqual(reports.count, 1)
        XCTAssertEqual(reports.first?["requests"] as? Int, 30)
        XCTAssertEqual(reports.first?["bytes"] as? Int, 30 * 8)
        XCTAssertEqual(reports.first?["connections"] as? Int, 3)
        XCTAssertEqual(server.requestCount, 33)
    }

    func testBenchTLSAndCompressionFlagsAgainstAURL() throws {
        let certs = try TestCertificates.shared
        let server = try TestServer(tls: .localhost())
        defer { server.shutdown() }
        server.route("/") { r in .text(r.header("Accept-Encoding") ?? "none") }
        let url = server.url(host: "localhost", path: "/")
        let common = ["bench", "--url", url, "--requests", "4", "--connections", "1", "--warmup", "0", "--json"]
        let untrusted = try PocketBinary.run(common)
        XCTAssertEqual(untrusted.status, 1, "every request fails without the CA")
        XCTAssertTrue(untrusted.stderrText.contains("tls_untrusted_certificate"), untrusted.stderrText)
        let trusted = try PocketBinary.run(common + ["--cacert", certs.caCert])
        XCTAssertEqual(trusted.status, 0, trusted.stderrText)
        XCTAssertEqual(try objects(trusted).first?["bytes"] as? Int, 4 * 4, "'none': no Accept-Encoding without --compressed")
        let insecure = try PocketBinary.run(common + ["--insecure", "--compressed"])
        XCTAssertEqual(insecure.status, 0, insecure.stderrText)
        XCTAssertEqual(try objects(insecure).first?["bytes"] as? Int, 4 * "gzip, deflate".count)
    }

    func testBenchFailsWhenEveryRequestFails() throws {
        let run = try PocketBinary.run(["bench", "--url", "http://127.0.0.1:\(try closedPort())/", "--requests", "5",
                                        "--connections", "1", "--warmup", "0", "--json"])
        XCTAssertEqual(run.status, 1)
        XCTAssertEqual(try objects(run).first?["errors"] as? Int, 5)
        XCTAssertTrue(run.stderrText.contains("connection_refused"), run.stderrText)
    }

    func testPocketBenchKeepsItsFlags() throws {
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try PocketBinary.run(["--requests", "200", "--connections", "2", "--warmup=10", "--json",
                                        "--body-sink", "file:\(dir.path)/sink"], binary: "pocket-bench")
        XCTAssertEqual(run.status, 0, run.stderrText)
        let report = try XCTUnwrap(try objects(run).first)
        XCTAssertEqual(report["requests"] as? Int, 200)
        XCTAssertEqual(report["bytes"] as? Int, 200 * 13)
        XCTAssertEqual(report["embedded_server"] as? Bool, true)
        // The sink path (client.send(_:writingBodyInto:)) counts the bytes its sink was written.
        let sunk = try PocketBinary.run(["--requests", "100", "--connections", "2", "--warmup=10", "--json",
                                         "--body-sink", "sink"], binary: "pocket-bench")
        XCTAssertEqual(sunk.status, 0, sunk.stderrText)
        XCTAssertEqual(try objects(sunk).first?["bytes"] as? Int, 100 * 13)
        let wrongSink = try PocketBinary.run(["--body-sink", "sunk"], binary: "pocket-bench")
        XCTAssertEqual(wrongSink.status, 2)
        XCTAssertTrue(wrongSink.stderrText.contains("memory, discard, sink or file:PATH"), wrongSink.stderrText)
        let bad = try PocketBinary.run(["--no-such-flag"], binary: "pocket-bench")
        XCTAssertEqual(bad.status, 2)
    }
}
