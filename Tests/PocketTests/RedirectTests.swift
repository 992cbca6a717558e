import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Redirects through real sockets: each status × method, bodies kept and
/// dropped, Location forms, credentials across origins, https → http.
final class RedirectTests: XCTestCase {
    func testEachStatusAndMethodRewritesAsRFC9110Says() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { r in .text("\(r.method) \(r.path) \(r.bodyText)") }
        let client = try makeClient()
        let methods: [PocketMethod] = [.get, .head, .post, .put, .delete, "PROPFIND"]
        for status in [301, 302, 303, 307, 308] {
            for method in methods {
                let from = "/from/\(status)/\(method)", to = "/to/\(status)/\(method)"
                server.routeRedirect(from, status, to: to)
                let hasBody = method != .get && method != .head
                var request = PocketRequest(method: method, url: url(server, from))
                if hasBody {
                    request.body = .text("payload")
                    request.headers["Content-Type"] = "text/plain"
                }
                let response = try await client.send(request)
                let becomesGet = (status == 303 && method != .head) || ((status == 301 || status == 302) && method == .post)
                let expectedMethod = becomesGet ? "GET" : method.rawValue
                let keepsBody = hasBody && !becomesGet
                let label = "\(status) after \(method)"
                XCTAssertEqual(response.status, 200, label)
                XCTAssertEqual(response.url, url(server, to), label)
                XCTAssertEqual(response.redirects, [PocketRedirectHop(status: status, from: url(server, from), to: url(server, to),
                                                               method: PocketMethod(expectedMethod))], label)
                guard let arrived = server.receivedRequests.last(where: { $0.path == to }) else {
                    XCTFail("\(label): nothing reached \(to)")
                    continue
                }
                XCTAssertEqual(arrived.method, expectedMethod, label)
                XCTAssertEqual(arrived.bodyText, keepsBody ? "payload" : "", label)
                XCTAssertEqual(arrived.header("Content-Type"), keepsBody ? "text/plain" : nil, label)
                XCTAssertEqual(arrived.header("Content-Length"), keepsBody ? "7" : nil, label)
                if method != .head { XCTAssertEqual(response.text, "\(expectedMethod) \(to) \(keepsBody ? "payload" : "")", label) }
            }
        }
        XCTAssertEqual(server.acceptedConnections, 1, "same-origin hops reuse the pooled connection")
    }

    func testRelativeLocationsResolveAgainstTheURLThatAnswered() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { r in .text(r.target) }
        let client = try makeClient()
        let cases: [(String, String)] = [
            ("/x/y/abs", "/elsewhere"),
            ("/x/y/rel", "sibling"),
            ("/x/y/up", "../parent?a=1"),
            ("/x/y/query", "?page=2"),
            ("/x/y/scheme-relative", "//127.0.0.1:\(server.port)/other"),
            ("/x/y/absolute", server.url("/full")),
            ("/x/y/encoded", "/a%20b/c?q=%2F"),
            ("/x/y/spaces", "  /trimmed  "),
        ]
        let expected = ["/elsewhere", "/x/y/sibling", "/x/parent?a=1", "/x/y/query?page=2", "/other", "/full",
                        "/a%20b/c?q=%2F", "/trimmed"]
        for ((from, location), target) in zip(cases, expected) {
            server.route(from) { r in
                r.query == nil ? .response(status: 302, headers: [("Location", location)]) : .text(r.target)
            }
            let response = try await client.send(PocketRequest(url: url(server, from)))
            XCTAssertEqual(response.text, target, "Location \(location)")
            XCTAssertEqual(response.url?.absoluteString, server.url(target), "Location \(location)")
        }
    }

    func testCredentialsAreRemovedWhenAHopLeavesTheOrigin() async throws {
        let a = try TestServer(), b = try TestServer()
        defer { a.shutdown(); b.shutdown() }
        b.route("/land") { _ in .text("b") }
        a.route("/land") { _ in .text("a") }
        a.routeRedirect("/same", 307, to: "/land")
        a.routeRedirect("/cross", 307, to: b.url("/land"))
        // Same host name and scheme, other port: another origin.
        let client = try makeClient()
        var request = PocketRequest(method: .post, url: url(a, "/same"), body: .text("x"))
        request.headers = ["Authorization": "Bearer secret", "Cookie": "s=1", "Proxy-Authorization": "Basic cA==",
                           "X-Trace": "kept"]
        _ = try await client.send(request)
        let same = try XCTUnwrap(a.receivedRequests.last)
        XCTAssertEqual(same.path, "/land")
        XCTAssertEqual(same.header("Authorization"), "Bearer secret", "same origin keeps credentials")
        XCTAssertEqual(same.header("Cookie"), "s=1")
        XCTAssertEqual(same.header("Proxy-Authorization"), "Basic cA==")

        request.url = url(a, "/cross")
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "b")
        let cross = try XCTUnwrap(b.receivedRequests.last)
        XCTAssertNil(cross.header("Authorization"))
        XCTAssertNil(cross.header("Cookie"))
        XCTAssertNil(cross.header("Proxy-Authorization"))
        XCTAssertEqual(cross.header("X-Trace"), "kept", "other fields go along")
        XCTAssertEqual(cross.bodyText, "x", "307 keeps the body across origins")
        // Credentials from user:password@ in the URL are not carried over either.
        request.url = URL(string: "http://user:pw@127.0.0.1:\(a.port)/cross")!
        request.headers = [:]
        _ = try await client.send(request)
        XCTAssertNotNil(a.receivedRequests.last?.header("Authorization"), "the first hop carried the URL's credentials")
        XCTAssertNil(b.receivedRequests.last?.header("Authorization"))
    }

    func testHTTPSToHTTPIsRefusedUnlessAllowed() async throws {
        var options = try TestServer.TLSOptions.localhost()
        let certs = try TestCertificates.shared
        options.certificateFile = certs.serverCert
        options.keyFile = certs.serverKey
        let secure = try TestServer(tls: options), plain = try TestServer()
        defer { secure.shutdown(); plain.shutdown() }
        plain.route("/clear") { r in .text("clear \(r.header("Authorization") ?? "-")") }
        secure.route("/secure") { _ in .text("secure") }
        secure.routeRedirect("/down", 301, to: plain.url("/clear"))
        plain.routeRedirect("/up", 301, to: secure.url(host: "localhost", path: "/secure"))
        let client = try makeClient { $0.tls.caFile = certs.caCert }
        var request = PocketRequest(url: URL(string: secure.url(host: "localhost", path: "/down"))!)
        request.headers["Authorization"] = "Bearer secret"
        let error = await assertPocketError(.insecureRedirect) { try await client.send(request) }
        XCTAssertEqual(error?.response?.status, 301)
        XCTAssertEqual(plain.requestCount, 0, "nothing was sent in clear")

        request.redirects = PocketRedirectPolicy(allowsInsecureDowngrade: true)
        let allowed = try await client.send(request)
        XCTAssertEqual(allowed.text, "clear -", "allowed, and the credentials stayed behind")

        let upgraded = try await client.send(PocketRequest(url: url(plain, "/up")))
        XCTAssertEqual(upgraded.text, "secure", "http → https needs no permission")
        XCTAssertEqual(upgraded.url?.scheme, "https")
    }

    func testA3xxWithoutLocationOrWithFollowingOffIsTheResponse() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/nolocation") { _ in .response(status: 302, body: Array("here".utf8)) }
        server.route("/notmodified") { _ in .response(status: 304, headers: [("Location", "/x")]) }
        server.routeRedirect("/r", 302, to: "/x")
        server.route("/x") { _ in .text("x") }
        let off = try makeClient { $0.redirects = .disabled }
        var response = try await off.send(PocketRequest(url: url(server, "/r")))
        XCTAssertEqual(response.status, 302)
        XCTAssertEqual(response.headers["Location"], "/x")
        XCTAssertEqual(response.url, url(server, "/r"))
        XCTAssertEqual(response.redirects, [])
        var request = PocketRequest(url: url(server, "/r"))
        request.redirects = .follow
        response = try await off.send(request)
        XCTAssertEqual(response.text, "x", "the request's policy wins over the client's")

        let on = try makeClient()
        request.redirects = .disabled
        response = try await on.send(request)
        XCTAssertEqual(response.status, 302, "and the other way round")
        response = try await on.send(PocketRequest(url: url(server, "/nolocation")))
        XCTAssertEqual(response.status, 302)
        XCTAssertEqual(response.text, "here")
        response = try await on.send(PocketRequest(url: url(server, "/notmodified")))
        XCTAssertEqual(response.status, 304, "304 is not a redirect to follow")
    }

    func testALocationThatLeadsNowhereIsAnError() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.routeRedirect("/ftp", 302, to: "ftp://127.0.0.1/file")
        server.routeRedirect("/nohost", 302, to: "http://")
        server.routeRedirect("/empty", 302, to: "  ")
        // A NUL in the host would leave "127.0.0.1" for DNS and TLS, another name for the rest.
        server.routeRedirect("/nul", 302, to: "http://127.0.0.1%00.evil.example:\(server.port)/x")
        server.routeRedirect("/crlf", 302, to: "http://127.0.0.1%0D%0AX-Injected:%201:\(server.port)/x")
        let client = try makeClient()
        for path in ["/ftp", "/nohost", "/empty", "/nul", "/crlf"] {
            let error = await assertPocketError(.badRedirectLocation) { try await client.send(PocketRequest(url: url(server, path))) }
            XCTAssertEqual(error?.response?.status, 302, path)
        }
        XCTAssertEqual(server.requestCount, 5, "no second request went anywhere")
    }
}

extension TestServer {
    /// Answers `from` with `status` and `Location: location` (and a short body).
    func routeRedirect(_ from: String, _ status: Int, to location: String) {
        route(from) { _ in .response(status: status, headers: [("Location", location)], body: Array("moved".utf8)) }
    }
}
