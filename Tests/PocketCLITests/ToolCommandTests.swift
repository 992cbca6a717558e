import Foundation
import PocketTestSupport
import XCTest

/// The tool around the transfers: several URLs on one client, `-Z`,
/// `--version`, `--help CATEGORY`, the completion scripts and the man page
/// made from the option table, and `-w`'s JSON.
final class ToolCommandTests: XCTestCase {
    func testSeveralURLsShareOneConnectionAndKeepTheirOrder() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        for name in ["a", "b", "c"] { server.route("/\(name)") { _ in .text("<\(name)>") } }
        let run = try PocketBinary.run(["-s", "-w", "%{urlnum}:%{num_connects} ", server.url("/a"), server.url("/b"),
                                        server.url("/c")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "<a>0:1 <b>1:0 <c>2:0 ", "bodies and -w lines in URL order, one connection")
        XCTAssertEqual(Set(server.receivedRequests.map(\.connectionIndex)).count, 1)
    }

    func testParallelWritesEachBodyWhole() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        // Each body trickles in pieces with pauses: written as it came, they would interleave.
        for name in ["x", "y", "z"] {
            let body = [UInt8](repeating: name.utf8.first!, count: 20 * 4096)
            server.route("/\(name)") { _ in
                .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n"),
                      .trickle(body, chunkSize: 4096, delayMilliseconds: 10)])
            }
        }
        let run = try PocketBinary.run(["-s", "-Z", "--parallel-max", "3", server.url("/x"), server.url("/y"), server.url("/z")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdout.count, 3 * 20 * 4096)
        // Three runs of one letter each, in whatever order they ended.
        var runs: [UInt8] = []
        for byte in run.stdout where runs.last != byte { runs.append(byte) }
        XCTAssertEqual(runs.count, 3, "no body interleaved with another")
        XCTAssertEqual(Set(runs), Set("xyz".utf8))
        XCTAssertEqual(Set(server.receivedRequests.map(\.connectionIndex)).count, 3, "at once, on a connection each")
    }

    func testNextStartsANewOptionSet() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/e") { r in .text("\(r.method) \(r.bodyText);") }
        let run = try PocketBinary.run(["-s", "-d", "k=v", server.url("/e"), "--next", "-X", "DELETE", server.url("/e")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "POST k=v;DELETE ;", "the second set has none of the first's options")
    }

    func testVersionNamesTheEngineLibraries() throws {
        let run = try PocketBinary.run(["--version"])
        XCTAssertEqual(run.status, 0)
        let lines = run.stdoutText.split(separator: "\n")
        XCTAssertTrue(lines.first?.hasPrefix("pocket ") == true, run.stdoutText)
        for part in ["OpenSSL 3", "zlib/1.", "libdeflate/1."] {
            XCTAssertTrue(run.stdoutText.contains(part), "\(part) in \(run.stdoutText)")
        }
        XCTAssertTrue(lines.contains("Protocols: http https"), run.stdoutText)
        let features = lines.first { $0.hasPrefix("Features: ") }.map { Set($0.dropFirst(10).split(separator: " ").map(String.init)) }
        // Every capability of the build, by curl's name where curl has one.
        for feature in ["AsynchDNS", "HTTP-proxy", "UnixSockets", "io_uring", "PSL", "TLS", "gzip", "deflate", "libz",
                        "IPv6", "Largefile", "cookies", "Range", "threadsafe"] {
            XCTAssertTrue(features?.contains(feature) == true, "\(feature) in \(run.stdoutText)")
        }
    }

    func testAnUnknownHelpCategoryIsAnError() throws {
        let run = try PocketBinary.run(["--help", "nosuchthing"])
        XCTAssertEqual(run.status, 64, "a usage error, not the full help")
        XCTAssertEqual(run.stdoutText, "", "nothing on stdout")
        XCTAssertTrue(run.stderrText.hasPrefix("pocket: unknown help category 'nosuchthing'; the categories: "), run.stderrText)
        XCTAssertTrue(run.stderrText.contains("tls"), "names the categories: \(run.stderrText)")
        let viaHelp = try PocketBinary.run(["help", "tls"])
        XCTAssertEqual(viaHelp.status, 0)
        XCTAssertTrue(viaHelp.stdoutText.contains("--cacert"), "pocket help CATEGORY is --help CATEGORY")
        XCTAssertFalse(viaHelp.stdoutText.contains("--data-raw"))
        let help = try PocketBinary.run(["--help"]).stdoutText
        XCTAssertFalse(help.contains("Installing completion"), "points to the README's real section")
    }

    func testHelpIsGroupedAndDescribesWriteOut() throws {
        let all = try PocketBinary.run(["--help"])
        XCTAssertEqual(all.status, 0)
        for title in ["HTTP POST (REQUEST BODIES) (--help post):", "TLS/SSL (--help tls):", "--data-urlencode",
                      "%{num_redirects}", "%{size_download}: body bytes as received"] {
            XCTAssertTrue(all.stdoutText.contains(title), "\(title) in the help")
        }
        let tls = try PocketBinary.run(["--help", "tls"])
        XCTAssertEqual(tls.status, 0)
        XCTAssertTrue(tls.stdoutText.contains("--cacert"))
        XCTAssertFalse(tls.stdoutText.contains("--data-raw"), "one category only")
    }

    func testCompletionScriptsAndManPageCoverEveryOption() throws {
        let help = try PocketBinary.run(["--help"]).stdoutText
        // The option lines: `  -o, --output <file>` and `      --json <json>`.
        let longs = Set(help.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  -") || line.hasPrefix("      --"), let r = line.range(of: "--") else { return nil }
            return String(line[r.lowerBound...].prefix { $0 != " " })
        }).subtracting(["--help"])
        XCTAssertGreaterThan(longs.count, 40, "\(longs)")
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for shell in ["bash", "zsh", "fish"] {
            let run = try PocketBinary.run(["--generate-completion-script", shell])
            XCTAssertEqual(run.status, 0, run.stderrText)
            for long in longs {
                let name = shell == "fish" ? "-l " + long.dropFirst(2) + " " : long
                XCTAssertTrue(run.stdoutText.contains(name), "\(shell) completes \(long)")
            }
            if shell == "bash" {
                let script = dir.appendingPathComponent("pocket.bash")
                try run.stdout.write(to: script)
                let check = try ChildProcess.run("/bin/bash", ["-n", script.path])
                XCTAssertEqual(check.0.status, 0, "bash -n: \(String(decoding: check.0.stderr, as: UTF8.self))")
            }
        }
        XCTAssertEqual(try PocketBinary.run(["--generate-completion-script", "tcsh"]).status, 64)
        let man = try PocketBinary.run(["--generate-manpage"])
        XCTAssertEqual(man.status, 0)
        XCTAssertTrue(man.stdoutText.hasPrefix(".TH POCKET 1"))
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") {
            let page = dir.appendingPathComponent("pocket.1")
            try man.stdout.write(to: page)
            let render = try ChildProcess.run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", page.path])
            XCTAssertEqual(render.0.status, 0)
            XCTAssertEqual(String(decoding: render.0.stderr, as: UTF8.self), "", "groff -ww has no warning")
            XCTAssertTrue(String(decoding: render.0.stdout, as: UTF8.self).contains("POCKET(1)"))
        }
        for long in longs {
            let roff = long.replacingOccurrences(of: "-", with: "\\-")
            XCTAssertTrue(man.stdoutText.contains(roff), "the man page has \(long)")
        }
    }

    func testWriteOutJSONIsJSON() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/r") { _ in .response(status: 302, headers: [("Location", "/t")]) }
        server.route("/t") { _ in .text("target", headers: [("X-Two", "1"), ("X-Two", "2")]) }
        let run = try PocketBinary.run(["-s", "-L", "-o", "/dev/null", "-w", "%{json}\\n%{header_json}", server.url("/r")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let parts = run.stdoutText.split(separator: "\n", maxSplits: 1).map(String.init)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(parts[0].utf8)) as? [String: Any])
        XCTAssertEqual(json["http_code"] as? Int, 200)
        XCTAssertEqual(json["num_redirects"] as? Int, 1)
        XCTAssertEqual(json["url_effective"] as? String, server.url("/t"))
        XCTAssertEqual(json["size_download"] as? Int, 6)
        let headers = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: [String]])
        XCTAssertEqual(headers["x-two"], ["1", "2"])
    }

    /// `%{time_redirect}` is the time of the redirect steps before the final
    /// request, and `%{time_total}` includes them, as curl reports them.
    func testTimeRedirectCoversTheStepsBeforeTheFinalRequest() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/r1") { _ in
            Thread.sleep(forTimeInterval: 0.3)
            return .response(status: 302, headers: [("Location", "/r2")])
        }
        server.route("/r2") { _ in
            Thread.sleep(forTimeInterval: 0.3)
            return .response(status: 302, headers: [("Location", "/t")])
        }
        server.route("/t") { _ in
            Thread.sleep(forTimeInterval: 0.2)
            return .text("end")
        }
        let run = try PocketBinary.run(["-s", "-L", "-o", "/dev/null", "-w", "%{time_redirect} %{time_total} %{time_starttransfer}",
                                        server.url("/r1")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let values = run.stdoutText.split(separator: " ").compactMap { Double($0) }
        XCTAssertEqual(values.count, 3, run.stdoutText)
        let (redirect, total, start) = (values[0], values[1], values[2])
        XCTAssertGreaterThanOrEqual(redirect, 0.6, "both redirect steps: \(run.stdoutText)")
        XCTAssertLessThan(redirect, 3, run.stdoutText)
        XCTAssertGreaterThanOrEqual(total, redirect + 0.2, "the total includes the steps and the final request: \(run.stdoutText)")
        XCTAssertGreaterThanOrEqual(start, 0.2, run.stdoutText)
        let json = try PocketBinary.run(["-s", "-L", "-o", "/dev/null", "-w", "%{json}", server.url("/r2")])
        let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any])
        XCTAssertGreaterThanOrEqual(parsed["time_redirect"] as? Double ?? 0, 0.3, json.stdoutText)

        let direct = try PocketBinary.run(["-s", "-o", "/dev/null", "-w", "%{time_redirect}", server.url("/t")])
        XCTAssertEqual(direct.stdoutText, "0.000000", "no redirect, no redirect time")
        let unfollowed = try PocketBinary.run(["-s", "-o", "/dev/null", "-w", "%{time_redirect}", server.url("/r2")])
        XCTAssertEqual(unfollowed.stdoutText, "0.000000", "a 3xx not followed (no -L) is the final request")
    }

    func testStderrSwitchAndUnknownVariableGoesOn() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/t") { _ in .text("body") }
        let run = try PocketBinary.run(["-s", "-w", "out %{http_code}%{stderr}err %{http_code}%{bogus}", server.url("/t")])
        XCTAssertEqual(run.status, 0)
        XCTAssertEqual(run.stdoutText, "bodyout 200")
        XCTAssertEqual(run.stderrText, "pocket: unknown --write-out variable: 'bogus'\nerr 200")
    }

    func testWriteOutNamesBothEndsOfTheConnection() throws {
        for host in ["127.0.0.1", "::1"] {
            guard let server = try? TestServer(host: host) else { continue } // no IPv6 loopback here
            defer { server.shutdown() }
            server.route("/t") { _ in .text("x") }
            let run = try PocketBinary.run(["-s", "-o", "/dev/null", "-w", "%{remote_ip} %{remote_port} %{local_port}",
                                            server.url("/t")])
            XCTAssertEqual(run.status, 0, run.stderrText)
            let fields = run.stdoutText.split(separator: " ").map(String.init)
            XCTAssertEqual(fields.count, 3, run.stdoutText)
            XCTAssertEqual(fields.first, host)
            XCTAssertEqual(fields.dropFirst().first, String(server.port))
            let local = Int(fields.last ?? "") ?? 0
            XCTAssertTrue(local > 0 && local != server.port, "an ephemeral local port: \(run.stdoutText)")
        }
    }
}
