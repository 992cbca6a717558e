import Foundation
import PocketTestSupport
import XCTest

/// `pocket`'s network-reach flags through the built binary: --unix-socket,
/// -x/--proxy-user/--noproxy (tinyproxy) and --resolve, with curl's exit codes.
final class ReachCommandTests: XCTestCase {
    private func unixServer() throws -> (TestServer, String, URL) {
        let dir = try PocketBinary.scratchDirectory()
        let path = dir.appendingPathComponent("s.sock").path
        let server = try TestServer(unixSocketPath: path)
        server.route("/hello") { request in .text("unix \(request.header("Host") ?? "-")") }
        return (server, path, dir)
    }

    func testUnixSocketAndItsExitCodes() throws {
        let (server, path, dir) = try unixServer()
        defer {
            server.shutdown()
            try? FileManager.default.removeItem(at: dir)
        }
        let run = try PocketBinary.run(["--unix-socket", path, "http://api.internal/hello"])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "unix api.internal")
        let missing = try PocketBinary.run(["--unix-socket", dir.appendingPathComponent("none.sock").path, "http://x/"])
        XCTAssertEqual(missing.status, 7, "curl's couldn't-connect")
        XCTAssertTrue(missing.stderrText.contains("unix_socket_not_found") && missing.stderrText.contains("none.sock"),
                      missing.stderrText)
    }

    func testProxyFlagsThroughTinyproxy() throws {
        guard TinyproxyFixture.executablePath != nil else { return XCTFail("tinyproxy is not installed (scripts/setup.sh)") }
        let proxy = try TinyproxyFixture(basicAuth: (user: "u", password: "pw"))
        defer { proxy.stop() }
        let origin = try TestServer()
        defer { origin.shutdown() }
        origin.route("/hello") { _ in .text("through") }
        let url = origin.url("/hello")
        let ok = try PocketBinary.run(["-x", "127.0.0.1:\(proxy.port)", "--proxy-user", "u:pw", url])
        XCTAssertEqual(ok.status, 0, ok.stderrText + proxy.log)
        XCTAssertEqual(ok.stdoutText, "through")
        let denied = try PocketBinary.run(["-x", proxy.url(), url])
        XCTAssertEqual(denied.status, 56, denied.stderrText)
        XCTAssertTrue(denied.stderrText.contains("proxy_authentication_required"), denied.stderrText)
        let bypass = try PocketBinary.run(["-x", proxy.url(), "--noproxy", "127.0.0.1", url])
        XCTAssertEqual(bypass.status, 0, bypass.stderrText)
        XCTAssertEqual(bypass.stdoutText, "through")
        let closed = try TestServer()
        let port = closed.port
        closed.shutdown()
        let unreachable = try PocketBinary.run(["-x", "http://127.0.0.1:\(port)", url])
        XCTAssertEqual(unreachable.status, 7, unreachable.stderrText)
        XCTAssertTrue(unreachable.stderrText.contains("127.0.0.1:\(port)"), unreachable.stderrText)
        let bad = try PocketBinary.run(["-x", "socks5://127.0.0.1:1", url])
        XCTAssertEqual(bad.status, 5, bad.stderrText)
    }

    /// --proxy-anyauth and --proxy-digest wait for the proxy's 407 and
    /// answer it (here tinyproxy's Basic, on CONNECT); the scheme flags
    /// exclude each other; a scheme the proxy does not offer leaves the 407.
    func testProxyAuthSchemesAnswerThe407() throws {
        guard TinyproxyFixture.executablePath != nil else { return XCTFail("tinyproxy is not installed (scripts/setup.sh)") }
        let proxy = try TinyproxyFixture(basicAuth: (user: "u", password: "pw"))
        defer { proxy.stop() }
        let origin = try TestServer(tls: .localhost())
        defer { origin.shutdown() }
        origin.route("/hello") { _ in .text("tunnelled") }
        let ca = try TestCertificates.shared.caCert
        let url = origin.url(host: "localhost", path: "/hello")
        let any = try PocketBinary.run(["-s", "--cacert", ca, "-x", proxy.url(), "--proxy-user", "u:pw", "--proxy-anyauth", url])
        XCTAssertEqual(any.status, 0, any.stderrText + proxy.log)
        XCTAssertEqual(any.stdoutText, "tunnelled")
        XCTAssertEqual(proxy.log.components(separatedBy: "): CONNECT localhost").count - 1, 2, "a 407, then the answer")
        let digestOnly = try PocketBinary.run(["-sS", "--cacert", ca, "-x", proxy.url(), "--proxy-user", "u:pw", "--proxy-digest", url])
        XCTAssertEqual(digestOnly.status, 56, "tinyproxy offers Basic only: " + digestOnly.stderrText)
        XCTAssertTrue(digestOnly.stderrText.contains("127.0.0.1:\(proxy.port)"), digestOnly.stderrText)
        let both = try PocketBinary.run(["--proxy-digest", "--proxy-basic", "-x", proxy.url(), "--proxy-user", "u:pw", url])
        XCTAssertEqual(both.status, 64, both.stderrText)
        XCTAssertTrue(both.stderrText.contains("one of"), both.stderrText)
    }

    func testResolveOverridesTheAddress() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/hello") { request in .text("host \(request.header("Host") ?? "-")") }
        let run = try PocketBinary.run(["--resolve", "api.test:\(server.port):127.0.0.1", "http://api.test:\(server.port)/hello"])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "host api.test:\(server.port)")
        let bad = try PocketBinary.run(["--resolve", "api.test:80:nonsense", "http://api.test/"])
        XCTAssertEqual(bad.status, 64, bad.stderrText)
    }
}
