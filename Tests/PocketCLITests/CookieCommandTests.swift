import Foundation
import PocketTestSupport
import XCTest

/// `pocket`'s cookie flags beyond what curl compares (CurlCompatTests has
/// the curl side): messages, stdin, the help, completion and --version.
final class CookieCommandTests: XCTestCase {
    private func server() throws -> TestServer {
        let server = try TestServer()
        server.route("/set") { _ in .response(status: 200, headers: [("Set-Cookie", "s=1; Max-Age=600")], body: Array("set".utf8)) }
        server.defaultHandler = { r in .text(r.header("Cookie") ?? "-") }
        return server
    }

    func testAJarThatCannotBeWrittenWarnsButKeepsTheExitStatus() throws {
        let server = try server()
        defer { server.shutdown() }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let jar = dir.appendingPathComponent("no/such/dir/jar").path
        let loud = try PocketBinary.run(["-c", jar, server.url("/set")])
        XCTAssertEqual(loud.status, 0, "curl exits 0 too")
        XCTAssertTrue(loud.stderrText.contains("warning") && loud.stderrText.contains(jar), loud.stderrText)
        let quiet = try PocketBinary.run(["-s", "-c", jar, server.url("/set")])
        XCTAssertEqual(quiet.status, 0)
        XCTAssertEqual(quiet.stderrText, "")
        // Written with the cookies, the file replaced whole.
        let good = dir.appendingPathComponent("jar").path
        try Data("old content\n".utf8).write(to: URL(fileURLWithPath: good))
        XCTAssertEqual(try PocketBinary.run(["-s", "-c", good, server.url("/set")]).status, 0)
        let text = try String(contentsOfFile: good, encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("# Netscape HTTP Cookie File\n"), text)
        XCTAssertTrue(text.contains("\ts\t1\n") && !text.contains("old content"), text)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted(), ["jar"], "no temporary file left")
    }

    func testVerboseCountsMalformedLinesAndStdinIsAFile() throws {
        let server = try server()
        defer { server.shutdown() }
        let file = "127.0.0.1\tFALSE\t/\tFALSE\t0\tok\t1\nbroken line\n127.0.0.1\tFALSE\t/\tFALSE\tsoon\tbad\t1\n"
        let run = try PocketBinary.run(["-s", "-v", "-b", "-", server.url("/")], stdin: Data(file.utf8))
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "ok=1")
        XCTAssertTrue(run.stderrText.contains("* cookie file -: 1 cookies, 2 malformed lines skipped (lines 2, 3)"), run.stderrText)
        XCTAssertTrue(run.stderrText.contains("> Cookie: ok=1"), "-v shows the field the store adds: \(run.stderrText)")
        let missing = try PocketBinary.run(["-s", "-v", "-b", "/no/such/file", server.url("/")])
        XCTAssertEqual(missing.status, 0)
        XCTAssertTrue(missing.stderrText.contains("cookie file /no/such/file ignored"), missing.stderrText)
    }

    func testSessionCookiesOfTheInvocationReachLaterURLs() throws {
        let server = try server()
        defer { server.shutdown() }
        let run = try PocketBinary.run(["-s", "-b", "", server.url("/set"), server.url("/")])
        XCTAssertEqual(run.stdoutText, "sets=1")
        let none = try PocketBinary.run(["-s", server.url("/set"), server.url("/")])
        XCTAssertEqual(none.stdoutText, "set-", "no store without -b FILE or -c, as curl")
    }

    func testHelpCompletionManPageAndVersion() throws {
        let http = try PocketBinary.run(["--help", "http"]).stdoutText
        for flag in ["-b, --cookie <data|file>", "-c, --cookie-jar <file>", "-j, --junk-session-cookies"] {
            XCTAssertTrue(http.contains(flag), "\(flag) in --help http: \(http)")
        }
        let bash = try PocketBinary.run(["--generate-completion-script", "bash"]).stdoutText
        XCTAssertTrue(bash.contains("--cookie-jar|-c"), bash)
        let man = try PocketBinary.run(["--generate-manpage"]).stdoutText
        XCTAssertTrue(man.contains("junk\\-session\\-cookies") || man.contains("junk-session-cookies"))
        let version = try PocketBinary.run(["--version"]).stdoutText
        XCTAssertTrue(version.contains(" libpsl/0."), version)
        XCTAssertTrue(version.contains(" PSL"), version)
    }
}
