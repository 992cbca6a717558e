import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Where a credential or a server-supplied value may go, through real
/// sockets, for the boundaries the other suites do not already hold
/// (SECURITY.md lists every boundary with the test that holds it).
final class CredentialBoundaryTests: XCTestCase {
    /// https → http on the same host name (the downgrade allowed): the
    /// scheme alone makes it another origin, so every credential stays behind.
    func testADowngradeToTheSameHostDropsEveryCredential() async throws {
        let certs = try TestCertificates.shared
        let secure = try TestServer(tls: try .localhost()), plain = try TestServer()
        defer { secure.shutdown(); plain.shutdown() }
        plain.route("/clear") { _ in .text("clear") }
        secure.routeRedirect("/down", 302, to: plain.url(host: "localhost", path: "/clear"))
        let client = try makeClient { $0.tls.caFile = certs.caCert }
        defer { Task { try? await client.shutdown() } }
        var request = PocketRequest(url: URL(string: secure.url(host: "localhost", path: "/down"))!)
        request.headers = ["Authorization": "Bearer secret", "Proxy-Authorization": "Basic cA==", "Cookie": "s=1",
                           "X-Trace": "kept"]
        request.redirects = PocketRedirectPolicy(allowsInsecureDowngrade: true)
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "clear")
        let sent = try XCTUnwrap(plain.receivedRequests.last)
        XCTAssertEqual(sent.header("Host"), "localhost:\(plain.port)")
        for name in ["Authorization", "Proxy-Authorization", "Cookie"] {
            XCTAssertNil(sent.header(name), "\(name) went over http after an https → http redirect")
        }
        XCTAssertEqual(sent.header("X-Trace"), "kept")
    }

    /// An origin's credential answers that origin's 401 only: a proxy that
    /// asks with 407 gets no answer from it (Digest or Basic offered).
    func testOriginCredentialsNeverAnswerAProxy() async throws {
        let proxy = try TestServer()
        defer { proxy.shutdown() }
        proxy.defaultHandler = { _ in
            .response(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"proxy\""),
                                             ("Proxy-Authenticate", "Digest realm=\"proxy\", nonce=\"abc\", qop=\"auth\"")])
        }
        let client = try proxiedClient("http://127.0.0.1:\(proxy.port)") {
            $0.handling.authentication = PocketAuthentication(username: "ada", password: "s3cret", schemes: [.digest, .basic])
        }
        defer { Task { try? await client.shutdown() } }
        await assertPocketError(.proxyAuthenticationRequired) {
            try await client.send(try PocketRequest("http://origin.example/x"))
        }
        XCTAssertEqual(proxy.requestCount, 1, "the 407 was not answered")
        XCTAssertTrue(proxy.receivedRequests.allSatisfy { $0.header("Proxy-Authorization") == nil && $0.header("Authorization") == nil })
    }

    /// The proxy's credential never goes to an origin reached directly: a
    /// redirect from a proxied request to a NO_PROXY host carries none.
    func testProxyCredentialsStayOffADirectHop() async throws {
        let final = try TestServer()
        defer { final.shutdown() }
        final.route("/hello") { request in .text(request.header("Proxy-Authorization") ?? "no-proxy-auth") }
        let proxy = try TestServer()
        defer { proxy.shutdown() }
        proxy.defaultHandler = { _ in
            .response(status: 302, headers: [("Location", "http://localhost:\(final.port)/hello")], body: [])
        }
        let client = try proxiedClient("http://user:s3cret@127.0.0.1:\(proxy.port)") { $0.noProxy = ["localhost"] }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(try PocketRequest("http://far.test/start"))
        XCTAssertNotNil(proxy.receivedRequests.first?.header("Proxy-Authorization"), "the proxy itself got the credential")
        XCTAssertEqual(response.text, "no-proxy-auth")
        XCTAssertEqual(final.requestCount, 1)
    }

    /// Through a CONNECT tunnel the certificate checked is the origin's, by
    /// the origin's name: an origin whose certificate names another host fails
    /// with the hostname check, though the proxy itself is fine.
    func testATunnelChecksTheOriginsHostname() async throws {
        let proxy = try startTinyproxy()
        let certs = try TestCertificates.shared
        let origin = try TestServer(tls: TestServer.TLSOptions(certificateFile: certs.wrongHostCert, keyFile: certs.wrongHostKey))
        defer { origin.shutdown() }
        origin.route("/hello") { _ in .text("hello") }
        let client = try proxiedClient(proxy.url())
        defer { Task { try? await client.shutdown() } }
        let error = await assertPocketError(.tlsHostnameMismatch) {
            try await client.send(try PocketRequest("https://localhost:\(origin.port)/hello"))
        }
        XCTAssertTrue(error?.message.contains("through proxy 127.0.0.1:\(proxy.port)") ?? false, error?.message ?? "")
        XCTAssertEqual(origin.requestCount, 0, "nothing was sent over the unverified tunnel")
        // The same tunnel to the origin by the name its certificate does not hold fails alike by IP.
        await assertPocketError(.tlsHostnameMismatch) {
            try await client.send(try PocketRequest("https://127.0.0.1:\(origin.port)/hello"))
        }
    }

    /// What a server sends (a Location, a cookie) cannot add a line to the
    /// next request: encoded CR/LF stay encoded in the target, a raw one in a
    /// field ends the exchange as a bad response, and a cookie cannot carry one.
    func testServerValuesCannotInjectLinesIntoTheNextRequest() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/encoded") { _ in
            .response(status: 302, headers: [("Location", "/next%0D%0AX-Injected:%20yes?a=%0d%0a")], body: [])
        }
        server.route("/bare-cr") { _ in
            .raw([.sendString("HTTP/1.1 302 Found\r\nLocation: /next\rX-Injected: yes\r\nContent-Length: 0\r\n\r\n")],
                 closeConnection: true)
        }
        server.route("/cookie") { _ in
            .raw([.sendString("HTTP/1.1 302 Found\r\nSet-Cookie: a=b\rX-Injected: yes\r\nSet-Cookie: c=d%0D%0AX-Injected: yes\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n")],
                 closeConnection: true)
        }
        server.defaultHandler = { request in .text(request.target) }
        let client = try makeClient { $0.cookies = PocketCookieStore() }
        defer { Task { try? await client.shutdown() } }

        let encoded = try await client.send(PocketRequest(url: url(server, "/encoded")))
        XCTAssertEqual(encoded.status, 200)
        XCTAssertEqual(encoded.text, "/next%0D%0AX-Injected:%20yes?a=%0d%0a", "the target is sent as encoded")

        do {
            let bare = try await client.send(PocketRequest(url: url(server, "/bare-cr")))
            XCTAssertFalse(bare.headers["Location"]?.contains("\r") ?? false, "a bare CR never reaches a field value")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .badHeader, "\(error)")
        }

        do {
            _ = try await client.send(PocketRequest(url: url(server, "/cookie")))
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .badHeader, "\(error)")
        }
        for request in server.receivedRequests {
            XCTAssertNil(request.header("X-Injected"), "\(request.target) carried an injected field")
            for (name, value) in request.headers {
                XCTAssertFalse(value.contains("\r") || value.contains("\n"), "\(name): \(value)")
            }
        }
    }
}
