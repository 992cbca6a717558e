import Foundation
import PocketTestSupport
import XCTest

/// `-u` with `--basic`, `--digest` and `--anyauth`, against a real Apache
/// httpd (mod_auth_digest, mod_auth_basic) and the in-process server.
final class AuthCommandTests: XCTestCase {
    func testBasicDigestAndAnyauthAgainstApache() throws {
        guard ApacheFixture.isAvailable else { throw XCTSkip("apache2 is not installed (scripts/setup.sh installs it)") }
        let apache = try ApacheFixture()
        defer { apache.stop() }
        let user = "\(ApacheFixture.user):\(ApacheFixture.password)"
        for (flags, path) in [(["--digest"], "/digest/hello.txt"), (["--anyauth"], "/digest/hello.txt"),
                              (["--anyauth"], "/basic/hello.txt"), ([], "/basic/hello.txt"), (["--basic"], "/basic/hello.txt")] {
            let run = try PocketBinary.run(flags + ["-f", "-s", "-S", "-u", user, apache.url(path)])
            XCTAssertEqual(run.status, 0, "\(flags) \(path): \(run.stderrText)\n\(apache.errorLog)")
            XCTAssertEqual(run.stdoutText, ApacheFixture.helloBody, "\(flags) \(path)")
        }
        // Basic cannot answer Digest; a wrong password is refused once.
        let basicOnDigest = try PocketBinary.run(["--basic", "-f", "-s", "-S", "-u", user, apache.url("/digest/hello.txt")])
        XCTAssertEqual(basicOnDigest.status, 22, basicOnDigest.stderrText)
        let wrong = try PocketBinary.run(["--digest", "-f", "-s", "-S", "-u", "\(ApacheFixture.user):nope", apache.url("/digest/hello.txt")])
        XCTAssertEqual(wrong.status, 22, wrong.stderrText)
        XCTAssertTrue(wrong.stderrText.contains("401"), wrong.stderrText)
        // Apache writes a log line after its answer has gone out: a moment
        // (bounded) for the last one to land.
        var log = apache.accessLog
        for _ in 0..<100 where log.filter({ $0.hasSuffix(" 200") }).count < 5 {
            usleep(20_000)
            log = apache.accessLog
        }
        XCTAssertEqual(log.filter { $0.hasSuffix(" 200") }.count, 5, "\(log)")
    }

    func testBasicIsSentWithTheFirstRequestAndDigestWaitsForTheChallenge() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/who") { request in
            .text(request.header("Authorization") ?? "none", status: request.header("Authorization") == nil ? 401 : 200,
                  headers: [("WWW-Authenticate", "Basic realm=\"r\"")])
        }
        let basic = try PocketBinary.run(["-u", "ada:s3cret", server.url("/who")])
        XCTAssertEqual(basic.stdoutText, "Basic " + Data("ada:s3cret".utf8).base64EncodedString())
        XCTAssertEqual(server.requestCount, 1, "curl's default: Basic at once")
        let digestOnly = try PocketBinary.run(["--digest", "-u", "ada:s3cret", server.url("/who")])
        XCTAssertEqual(digestOnly.stdoutText, "none", "--digest does not answer a Basic challenge")
        XCTAssertEqual(server.requestCount, 2)
        let any = try PocketBinary.run(["--anyauth", "-u", "ada:s3cret", server.url("/who")])
        XCTAssertTrue(any.stdoutText.hasPrefix("Basic "), any.stdoutText)
        XCTAssertEqual(server.requestCount, 4, "--anyauth asks first, then answers")
    }

    /// Two origins (two ports): without --location-trusted the second gets
    /// no Authorization and no Cookie (curl's rule since 7.83); with it, the
    /// -u Basic credential, a -H Authorization and a -b cookie all follow.
    func testLocationTrustedKeepsCredentialsAcrossOrigins() throws {
        let second = try TestServer()
        defer { second.shutdown() }
        second.route("/landing") { request in
            .text("\(request.header("Authorization") ?? "none") | \(request.header("Cookie") ?? "none")")
        }
        let first = try TestServer()
        defer { first.shutdown() }
        first.route("/start") { _ in .response(status: 302, headers: [("Location", second.url("/landing"))]) }
        let basic = "Basic " + Data("ada:s3cret".utf8).base64EncodedString()
        let plain = try PocketBinary.run(["-s", "-L", "-u", "ada:s3cret", "-b", "k=v", first.url("/start")])
        XCTAssertEqual(plain.status, 0, plain.stderrText)
        XCTAssertEqual(plain.stdoutText, "none | none", "-L alone: the other origin gets no credential")
        let trusted = try PocketBinary.run(["-s", "--location-trusted", "-u", "ada:s3cret", "-b", "k=v", first.url("/start")])
        XCTAssertEqual(trusted.status, 0, trusted.stderrText)
        XCTAssertEqual(trusted.stdoutText, "\(basic) | k=v", "--location-trusted (implies -L) keeps them")
        let header = try PocketBinary.run(["-s", "--location-trusted", "-H", "Authorization: Bearer t0k", first.url("/start")])
        XCTAssertEqual(header.stdoutText, "Bearer t0k | none")
        let headerUntrusted = try PocketBinary.run(["-s", "-L", "-H", "Authorization: Bearer t0k", first.url("/start")])
        XCTAssertEqual(headerUntrusted.stdoutText, "none | none")
        XCTAssertEqual(second.requestCount, 4)
    }

    /// `-U` is `--proxy-user`: the forwarded request carries Proxy-Authorization.
    func testShortProxyUserFlag() throws {
        let proxy = try TestServer()
        defer { proxy.shutdown() }
        proxy.defaultHandler = { request in .text("\(request.target) \(request.header("Proxy-Authorization") ?? "none")") }
        let run = try PocketBinary.run(["-s", "-x", "http://127.0.0.1:\(proxy.port)", "-U", "pat:pw", "http://origin.example/x"])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "http://origin.example/x Basic " + Data("pat:pw".utf8).base64EncodedString())
    }

    func testUsageErrors() throws {
        for (args, mentions) in [(["--digest", "http://127.0.0.1:1/"], "need -u"),
                                 (["-u", "ada", "http://127.0.0.1:1/"], "user:password"),
                                 (["--digest", "--basic", "-u", "a:b", "http://127.0.0.1:1/"], "one of"),
                                 (["-u", ":b", "http://127.0.0.1:1/"], "empty")] {
            let run = try PocketBinary.run(args)
            XCTAssertEqual(run.status, 64, "\(args): \(run.stderrText)")
            XCTAssertTrue(run.stderrText.contains(mentions), "\(args): \(run.stderrText)")
        }
    }
}
