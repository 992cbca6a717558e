import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Proxies through real sockets: Debian's tinyproxy (forwarding, CONNECT,
/// Basic auth, refusals) and hostile proxies played by the in-process
/// server (stall, garbage, close).
final class ProxyTests: XCTestCase {
    private func tinyproxy(basicAuth: (String, String)? = nil, connectPorts: [Int]? = nil) throws -> TinyproxyFixture {
        try startTinyproxy(basicAuth: basicAuth, connectPorts: connectPorts)
    }

    private func origin(tls: Bool = false) throws -> TestServer {
        let server = try TestServer(tls: tls ? try .localhost() : nil)
        addTeardownBlock { server.shutdown() }
        server.route("/hello") { request in
            .text("hello \(request.header("Host") ?? "-") \(request.header("Proxy-Authorization") ?? "no-proxy-auth")")
        }
        return server
    }

    private func client(_ proxy: String?, _ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
        try proxiedClient(proxy, configure)
    }

    func testHTTPAndHTTPSThroughTinyproxy() async throws {
        let proxy = try tinyproxy()
        let plain = try origin(), secure = try origin(tls: true)
        let client = try client(proxy.url())
        let r = try await client.send(try PocketRequest("http://127.0.0.1:\(plain.port)/hello"))
        XCTAssertEqual(r.status, 200, proxy.log)
        XCTAssertEqual(r.text, "hello 127.0.0.1:\(plain.port) no-proxy-auth")
        XCTAssertEqual(r.timings.remoteAddress, "127.0.0.1")
        XCTAssertEqual(plain.receivedRequests.last?.target, "/hello", "tinyproxy passed it on in origin form")

        let s1 = try await client.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertEqual(s1.text, "hello localhost:\(secure.port) no-proxy-auth")
        XCTAssertGreaterThan(s1.timings.tunnel, .zero)
        XCTAssertGreaterThan(s1.timings.tls, .zero)
        XCTAssertEqual(secure.tlsHandshakeDetails.first?.serverName, "localhost", "SNI names the origin, not the proxy")
        let s2 = try await client.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertTrue(s2.timings.reusedConnection, "the tunnel is pooled")
        XCTAssertEqual(s2.timings.tunnel, .zero)
        XCTAssertEqual(secure.tlsHandshakes, 1)

        // Verification is against the origin: a CA the client does not trust fails it.
        let untrusting = try makeClient { $0.proxy = try? PocketProxy(proxy.url()); $0.proxyFromEnvironment = false }
        await assertPocketError(.tlsUntrustedCertificate) {
            try await untrusting.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
    }

    func testBasicProxyAuthAnd407() async throws {
        let proxy = try tinyproxy(basicAuth: ("user", "s3cret"))
        let plain = try origin(), secure = try origin(tls: true)
        let anonymous = try client(proxy.url())
        let e1 = await assertPocketError(.proxyAuthenticationRequired) {
            try await anonymous.send(try PocketRequest("http://127.0.0.1:\(plain.port)/hello"))
        }
        XCTAssertTrue(e1?.message.contains("127.0.0.1:\(proxy.port)") ?? false, e1?.message ?? "")
        XCTAssertEqual(e1?.response?.status, 407)
        let e2 = await assertPocketError(.proxyAuthenticationRequired) {
            try await anonymous.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
        XCTAssertTrue(e2?.message.contains("wants credentials") ?? false, (e2?.message ?? "") + proxy.log)
        let wrong = try client(proxy.url(user: "user", password: "nope"))
        let e3 = await assertPocketError(.proxyAuthenticationRequired) {
            try await wrong.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
        XCTAssertTrue(e3?.message.contains("refused the credentials") ?? false, e3?.message ?? "")

        let good = try client(proxy.url(user: "user", password: "s3cret"))
        let r = try await good.send(try PocketRequest("http://127.0.0.1:\(plain.port)/hello"))
        XCTAssertEqual(r.status, 200, proxy.log)
        let s = try await good.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertEqual(s.text, "hello localhost:\(secure.port) no-proxy-auth", "the credentials stay with the proxy")
        XCTAssertFalse(plain.receivedRequests.contains { $0.header("Proxy-Authorization") != nil })
    }

    func testConnectRefusalAndUnreachableProxyNameTheProxy() async throws {
        let proxy = try tinyproxy(connectPorts: [443])
        let secure = try origin(tls: true)
        let client = try client(proxy.url())
        let refused = await assertPocketError(.proxyConnectFailed) {
            try await client.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
        XCTAssertEqual(refused?.systemError, 403)
        XCTAssertTrue(refused?.message.contains("HTTP 403") ?? false, refused?.message ?? "")
        XCTAssertTrue(refused?.message.contains("127.0.0.1:\(proxy.port)") ?? false, refused?.message ?? "")

        let closedServer = try TestServer()
        let port = closedServer.port
        closedServer.shutdown() // nothing listens there now
        let nowhere = try self.client("http://127.0.0.1:\(port)")
        let unreachable = await assertPocketError(.proxyUnreachable) {
            try await nowhere.send(try PocketRequest("http://example.invalid/"))
        }
        XCTAssertTrue(unreachable?.message.contains("127.0.0.1:\(port)") ?? false, unreachable?.message ?? "")
        XCTAssertEqual((unreachable?.underlying as? PocketError)?.code, .connectionRefused)
    }

    func testHostileProxies() async throws {
        let hostile = try TestServer()
        defer { hostile.shutdown() }
        let client = try client("http://127.0.0.1:\(hostile.port)") { $0.timeouts.connect = .milliseconds(400) }
        let url = "https://localhost:443/x"
        _ = await eventually(0.05) { false } // the runtime's timer descriptor exists before counting
        let before = openFileDescriptorCount()
        func fds() -> Set<String> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).map {
                "\($0)->" + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) ?? "?")
            })
        }
        let beforeSet = fds()

        hostile.defaultHandler = { _ in .stall(milliseconds: 2_000) }
        let stalled = await assertPocketError(.connectTimeout) { try await client.send(try PocketRequest(url)) }
        XCTAssertTrue(stalled?.message.contains("proxy 127.0.0.1:\(hostile.port)") ?? false, stalled?.message ?? "")

        hostile.defaultHandler = { _ in .raw([.sendString("SSH-2.0-OpenSSH_9.2\r\n\r\n")], closeConnection: true) }
        await assertPocketError(.proxyBadResponse) { try await client.send(try PocketRequest(url)) }

        hostile.defaultHandler = { _ in .raw([.sendString("HTTP/1.1 200 OK\r\n\r\nsurprise")], closeConnection: true) }
        await assertPocketError(.proxyBadResponse) { try await client.send(try PocketRequest(url)) }

        hostile.defaultHandler = { _ in .raw([.sendString("HTTP/1.1 200 Connection")], closeConnection: true) }
        let closed = await assertPocketError(.proxyTunnelClosed) { try await client.send(try PocketRequest(url)) }
        XCTAssertTrue(closed?.message.contains("127.0.0.1:\(hostile.port)") ?? false, closed?.message ?? "")
        XCTAssertTrue(hostile.receivedRequests.allSatisfy { $0.method == "CONNECT" && $0.target == "localhost:443" })
        // Every failed tunnel closed its socket (the stalled one's server side ends with its 2 s stall).
        let restored = await eventually(4) { openFileDescriptorCount() == before }
        XCTAssertTrue(restored, "descriptors: \(before) before, \(openFileDescriptorCount()) after: \(fds().subtracting(beforeSet)) \(beforeSet.subtracting(fds()))")
    }

    func testForwardingUsesAbsoluteFormAndPoolKeysKeepProxiedAndDirectApart() async throws {
        let direct = try origin()
        let recorder = try TestServer()
        defer { recorder.shutdown() }
        recorder.defaultHandler = { request in .text("proxied \(request.target)") }
        var proxy = try PocketProxy("http://127.0.0.1:\(recorder.port)")
        proxy.username = "u"
        proxy.password = "p"
        let client = try makeClient { $0.proxyFromEnvironment = false }
        var viaProxy = try PocketRequest("http://127.0.0.1:\(direct.port)/hello?q=1")
        viaProxy.proxy = proxy
        for _ in 0..<2 {
            let r = try await client.send(viaProxy)
            XCTAssertEqual(r.text, "proxied http://127.0.0.1:\(direct.port)/hello?q=1")
        }
        XCTAssertEqual(recorder.receivedRequests.first?.header("Proxy-Authorization"), "Basic dTpw")
        XCTAssertEqual(recorder.acceptedConnections, 1, "the proxy connection is pooled")
        let plain = try await client.send(try PocketRequest("http://127.0.0.1:\(direct.port)/hello"))
        XCTAssertEqual(plain.text, "hello 127.0.0.1:\(direct.port) no-proxy-auth", "a direct request never takes the proxy's connection")
        XCTAssertEqual(direct.acceptedConnections, 1)
        XCTAssertEqual(recorder.requestCount, 2)
    }

    func testPrecedenceAndTheEnvironmentAsCurlReadsIt() throws {
        var config = PocketClient.Configuration()
        let env = ["HTTP_PROXY": "http://upper:1", "https_proxy": "http://lower-https:2", "HTTPS_PROXY": "http://upper-https:3",
                   "ALL_PROXY": "http://all:4", "NO_PROXY": "internal.example, .corp.test,10.0.0.0/8,::1,192.168.1.7"]
        let rules = try XCTUnwrap(ProxyRules.make(config, environment: env))
        func chosen(_ url: String, own: PocketProxy? = nil, _ r: ProxyRules? = nil) throws -> String? {
            try ProxyRules.proxy(for: try PocketRequest(url).target, own: own, rules: r ?? rules)?.address
        }
        XCTAssertEqual(try chosen("http://example.com/"), "all:4", "HTTP_PROXY is ignored (httpoxy); ALL_PROXY applies")
        XCTAssertEqual(try chosen("https://example.com/"), "lower-https:2")
        XCTAssertNil(try chosen("http://internal.example/"))
        XCTAssertNil(try chosen("http://api.internal.example/"), "a name matches its subdomains")
        XCTAssertEqual(try chosen("http://notinternal.example/"), "all:4", "but not other names ending the same")
        XCTAssertNil(try chosen("http://x.corp.test/"))
        XCTAssertNil(try chosen("http://10.20.30.40/"), "CIDR")
        XCTAssertEqual(try chosen("http://11.0.0.1/"), "all:4")
        XCTAssertNil(try chosen("http://[::1]:8080/"))
        XCTAssertNil(try chosen("http://192.168.1.7/"))
        XCTAssertEqual(try chosen("http://192.168.1.8/"), "all:4")
        XCTAssertEqual(try chosen("http://example.com/", own: try PocketProxy("mine:5")), "mine:5", "the request's beats all")
        XCTAssertNil(try chosen("http://example.com/", own: .direct))

        let lower = try XCTUnwrap(ProxyRules.make(config, environment: ["http_proxy": "proxy:8", "no_proxy": "*"]))
        XCTAssertNil(try chosen("http://example.com/", lower), "* sends everything direct")
        let starAmongOthers = try XCTUnwrap(ProxyRules.make(config, environment: ["http_proxy": "proxy:8", "no_proxy": "*,internal.example"]))
        XCTAssertEqual(try chosen("http://example.com/", starAmongOthers), "proxy:8", "* is the wildcard only alone (curl's rule)")
        XCTAssertNil(try chosen("http://internal.example/", starAmongOthers))
        XCTAssertNil(ProxyRules.make(config, environment: ["HTTP_PROXY": "http://upper:1"]), "nothing applies")

        config.proxy = try PocketProxy("http://client:6")
        XCTAssertEqual(try chosen("https://example.com/", try XCTUnwrap(ProxyRules.make(config, environment: env))), "client:6",
                       "the client's beats the environment's")
        config.proxy = nil
        config.proxyFromEnvironment = false
        XCTAssertNil(ProxyRules.make(config, environment: env), "opted out")

        let bad = try XCTUnwrap(ProxyRules.make(PocketClient.Configuration(), environment: ["https_proxy": "socks5://s:1"]))
        XCTAssertThrowsError(try chosen("https://example.com/", bad)) {
            XCTAssertEqual(($0 as? PocketError)?.code, .invalidProxy)
            XCTAssertTrue("\($0)".contains("https_proxy"))
        }
        XCTAssertEqual(try PocketProxy("http://a%40b:p%3A@h").username, "a@b")
        XCTAssertEqual(try PocketProxy("h").port, 1080)
    }

    func testEnvironmentProxyAndRedirectsReevaluateNoProxy() async throws {
        let final = try origin()
        let recorder = try TestServer()
        defer { recorder.shutdown() }
        // The "proxy" answers a far host's request with a redirect to a
        // NO_PROXY host: the next hop must go direct.
        recorder.defaultHandler = { _ in
            .response(status: 302, headers: [("Location", "http://localhost:\(final.port)/hello")], body: [])
        }
        setenv("http_proxy", "http://127.0.0.1:\(recorder.port)", 1)
        setenv("no_proxy", "localhost", 1)
        let client: PocketClient
        defer {
            unsetenv("http_proxy")
            unsetenv("no_proxy")
        }
        client = try makeClient()
        let r = try await client.send(try PocketRequest("http://far.test/start"))
        XCTAssertEqual(r.text, "hello localhost:\(final.port) no-proxy-auth")
        XCTAssertEqual(recorder.receivedRequests.map(\.target), ["http://far.test/start"])
        XCTAssertEqual(final.requestCount, 1)
        let optedOut = try makeClient { $0.proxyFromEnvironment = false }
        await assertPocketError(.dnsFailure) { try await optedOut.send(try PocketRequest("http://far.test/start")) }
    }
}

/// A client through `proxy` (nil: the configuration's default), never the
/// environment's, trusting the test CA, with a 2 s connect timeout.
func proxiedClient(_ proxy: String?, _ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
    let ca = try TestCertificates.shared.caCert
    let parsed = try proxy.map { try PocketProxy($0) }
    return try makeClient {
        $0.proxy = parsed
        $0.proxyFromEnvironment = false
        $0.tls.caFile = ca
        $0.timeouts.connect = .seconds(2)
        configure(&$0)
    }
}

extension XCTestCase {
    /// Debian's tinyproxy on a loopback port for this test, stopped at its
    /// end; fails the test when tinyproxy is not installed.
    func startTinyproxy(basicAuth: (String, String)? = nil, connectPorts: [Int]? = nil) throws -> TinyproxyFixture {
        guard TinyproxyFixture.executablePath != nil else {
            XCTFail("tinyproxy is not installed: apt-get install tinyproxy (scripts/setup.sh)")
            throw PocketError(.unknown, "tinyproxy missing")
        }
        let proxy = try TinyproxyFixture(basicAuth: basicAuth.map { (user: $0.0, password: $0.1) }, connectPorts: connectPorts)
        addTeardownBlock { proxy.stop() }
        return proxy
    }
}
