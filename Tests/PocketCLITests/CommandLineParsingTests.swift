import Foundation
import PocketTestSupport
import XCTest

/// `pocket`'s command-line syntax (CommandLineOptions.swift), through the
/// built binary: curl's forms of flags and values, and usage errors (64).
final class CommandLineParsingTests: XCTestCase {
    private var server: TestServer!
    private var directory: URL!

    override func setUpWithError() throws {
        server = try TestServer()
        server.route("/x") { _ in .text("hello") }
        directory = try PocketBinary.scratchDirectory()
    }

    override func tearDown() {
        server?.shutdown()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Runs pocket with `arguments` (OUT: the output file) and returns the output file's text.
    private func fetch(_ arguments: [String]) throws -> String {
        let out = directory.appendingPathComponent("out-\(UUID().uuidString)").path
        let run = try PocketBinary.run(arguments.map { $0 == "OUT" ? out : $0 == "URL" ? server.url("/x") : $0 })
        XCTAssertEqual(run.status, 0, "\(arguments): \(run.stderrText)")
        return (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    }

    func testValueFormsOfShortAndLongOptions() throws {
        XCTAssertEqual(try fetch(["-s", "-o", "OUT", "URL"]), "hello")
        XCTAssertEqual(try fetch(["-sSo", "OUT", "URL"]), "hello", "flags grouped with an option last")
        XCTAssertEqual(try fetch(["-s", "--output", "OUT", "URL"]), "hello")
        XCTAssertEqual(try fetch(["fetch", "-s", "-o", "OUT", "URL"]), "hello", "the fetch subcommand by name")
        XCTAssertEqual(try fetch(["-s", "-o", "OUT", "--", "URL"]), "hello", "-- ends the options")
        XCTAssertEqual(try fetch(["URL", "-s", "-o", "OUT"]), "hello", "options after the URL")
        // Attached values: -oFILE and --output=FILE.
        let attached = directory.appendingPathComponent("attached").path
        XCTAssertEqual(try PocketBinary.run(["-s", "-o" + attached, server.url("/x")]).status, 0)
        XCTAssertEqual(try String(contentsOfFile: attached, encoding: .utf8), "hello")
        let equals = directory.appendingPathComponent("equals").path
        XCTAssertEqual(try PocketBinary.run(["-s", "--output=" + equals, server.url("/x")]).status, 0)
        XCTAssertEqual(try String(contentsOfFile: equals, encoding: .utf8), "hello")
    }

    func testTheNextArgumentIsTheValueEvenWithADash() throws {
        XCTAssertEqual(try fetch(["-s", "-L", "--max-redirs", "-1", "-o", "OUT", "URL"]), "hello")
        let run = try PocketBinary.run(["-s", "-o", "-", server.url("/x")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "hello", "-o - is stdout")
    }

    func testUsageErrorsExit64() throws {
        let cases: [([String], String)] = [
            (["--nope", server.url("/x")], "--nope"),
            (["-Z", "--parallel-max", "0", server.url("/x")], "--parallel-max"),
            ([server.url("/x"), "--next", "-s"], "has no URL"),
            ([server.url("/x"), "-o"], "needs a value"),
            (["-s"], "missing the URL"),
            (["--retry", "many", server.url("/x")], "--retry"),
            (["--silent=yes", server.url("/x")], "takes no value"),
            (["bench", "--requests", "0"], "--requests"),
        ]
        for (arguments, mention) in cases {
            let run = try PocketBinary.run(arguments)
            XCTAssertEqual(run.status, 64, "\(arguments): \(run.stderrText)")
            XCTAssertTrue(run.stderrText.contains(mention), "\(arguments): \(run.stderrText)")
        }
        XCTAssertTrue(server.receivedRequests.isEmpty, "no request on a usage error")
    }

    func testHelpListsTheOptionsAndTheExitStatuses() throws {
        for arguments in [["--help"], ["-h"], ["fetch", "--help"], ["help"]] {
            let run = try PocketBinary.run(arguments)
            XCTAssertEqual(run.status, 0, "\(arguments): \(run.stderrText)")
            for expected in ["-o, --output <file>", "--max-redirs <N>", "-F, --form <name=content>", "-s, --silent"] {
                XCTAssertTrue(run.stdoutText.contains(expected), "\(arguments) lacks \(expected)")
            }
        }
        XCTAssertTrue(try PocketBinary.run(["--help"]).stdoutText.contains("64\tusage"))
        let bench = try PocketBinary.run(["bench", "--help"])
        XCTAssertEqual(bench.status, 0)
        XCTAssertTrue(bench.stdoutText.contains("--connections"), bench.stdoutText)
    }
}
