import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// A proxy's side of Digest (SHA-256 and MD5 offered with Basic, qop=auth)
/// for the in-process server acting as a forward proxy or as a CONNECT
/// proxy: it checks each `Proxy-Authorization` against the password with the
/// test support's own SHA-256 and keeps the nonce counts it accepted.
final class ProxyDigestRealm: Sendable {
    struct State {
        var nonce = "p-1"
        var nonces = 1
        var accepted: [String] = []
        var challenges = 0
    }

    let realm = "proxy@test"
    let user = "ada"
    let password = "s3cret"
    let state = Lock(State())

    var accepted: [String] { state.withLock { $0.accepted } }
    var challenges: Int { state.withLock { $0.challenges } }

    func rotateNonce() {
        state.withLock { s in
            s.nonces += 1
            s.nonce = "p-\(s.nonces)"
        }
    }

    /// nil when `request` carries a valid answer to the current nonce, else
    /// the 407 that challenges it (`stale=true` for a valid answer to an old nonce).
    func challenge(_ request: TestServer.Request) -> TestServer.Reply? {
        let nonce = state.withLock { $0.nonce }
        var stale = false
        if let value = request.header("Proxy-Authorization"), let answer = AuthChallenge.parse([value]).first,
           answer.scheme == "digest" {
            let p = answer.parameters
            let ha1 = DigestRealm.h("\(user):\(realm):\(password)")
            let ha2 = DigestRealm.h("\(request.method):\(p["uri"] ?? "")")
            let expected = DigestRealm.h("\(ha1):\(p["nonce"] ?? ""):\(p["nc"] ?? ""):\(p["cnonce"] ?? ""):auth:\(ha2)")
            if p["username"] == user, p["realm"] == realm, p["uri"] == request.target, p["algorithm"] == "SHA-256",
               p["response"] == expected {
                if p["nonce"] == nonce {
                    state.withLock { $0.accepted.append(p["nc"] ?? "") }
                    return nil
                }
                stale = true
            }
        }
        state.withLock { $0.challenges += 1 }
        let digest = "realm=\"\(realm)\", qop=\"auth\", nonce=\"\(nonce)\"" + (stale ? ", stale=true" : "")
        return .response(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"\(realm)\""),
                                                ("Proxy-Authenticate", "Digest \(digest), algorithm=MD5"),
                                                ("Proxy-Authenticate", "Digest \(digest), algorithm=SHA-256")],
                         body: Array("proxy says: who are you?".utf8))
    }
}

/// A proxy's 407 answered on the one request path: Basic
/// against Debian's tinyproxy (forwarding and CONNECT), Digest against the
/// in-process server acting as the proxy (tinyproxy has no Digest).
final class ProxyAuthenticationTests: XCTestCase {
    private func tinyproxy() throws -> TinyproxyFixture {
        try startTinyproxy(basicAuth: ("user", "s3cret"))
    }

    private func origin(tls: Bool = false) throws -> TestServer {
        let server = try TestServer(tls: tls ? try .localhost() : nil)
        addTeardownBlock { server.shutdown() }
        server.route("/hello") { request in
            .text("hello \(request.header("Proxy-Authorization") ?? "no-proxy-auth") \(request.header("Authorization") ?? "no-auth")")
        }
        return server
    }

    private func client(proxy: String, _ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
        try proxiedClient(proxy, configure)
    }

    // MARK: Basic, real tinyproxy

    func testBasic407FromTinyproxyIsAnsweredForForwardingAndForTheTunnel() async throws {
        let proxy = try tinyproxy()
        let plain = try origin(), secure = try origin(tls: true)
        let client = try client(proxy: proxy.url()) {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "user", password: "s3cret")
        }
        // Forwarded: the 407 is answered once with Proxy-Authorization.
        let r = try await client.send(try PocketRequest("http://127.0.0.1:\(plain.port)/hello"))
        XCTAssertEqual(r.status, 200, proxy.log)
        XCTAssertEqual(r.text, "hello no-proxy-auth no-auth", "tinyproxy keeps the credentials; none reach the origin")
        XCTAssertNil(r.request?.headers["Proxy-Authorization"], "the proxy's answer is not the request's own field")

        // CONNECT: the engine reports the 407 with its challenge; the
        // request goes again with the answer on its CONNECT.
        let s1 = try await client.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertEqual(s1.status, 200, proxy.log)
        XCTAssertEqual(s1.text, "hello no-proxy-auth no-auth")
        XCTAssertGreaterThan(s1.timings.tunnel, .zero)
        // The accepted answer is sent at once afterwards, so the tunnel pooled under it is found.
        let s2 = try await client.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertEqual(s2.status, 200)
        XCTAssertTrue(s2.timings.reusedConnection, "the answered tunnel is pooled and reused")
        XCTAssertEqual(secure.tlsHandshakes, 1)
        XCTAssertFalse(plain.receivedRequests.contains { $0.header("Proxy-Authorization") != nil })
        try await client.shutdown()
    }

    func testAHandlerIsToldItIsAProxyAndWhatTheProxyRefused() async throws {
        let proxy = try tinyproxy()
        let secure = try origin(tls: true)
        let asked = Lock<[PocketAuthChallenge]>([])
        let client = try client(proxy: proxy.url()) {
            $0.handling.proxyAuthentication = PocketAuthentication { challenge in
                asked.withLock { $0.append(challenge) }
                return challenge.refused == nil ? PocketCredential(username: "user", password: "guess")
                                                : PocketCredential(username: "user", password: "s3cret")
            }
            // The origin's own authentication is never asked about the proxy.
            $0.handling.authentication = PocketAuthentication { _ in
                XCTFail("the origin's handler was asked about a proxy challenge")
                return nil
            }
        }
        let s = try await client.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertEqual(s.status, 200, proxy.log)
        let challenges = asked.withLock { $0 }
        XCTAssertEqual(challenges.count, 2, "asked on the 407, and again after tinyproxy's 401 to the wrong password")
        XCTAssertEqual(challenges.map(\.isProxy), [true, true])
        XCTAssertEqual(challenges.first?.url.absoluteString, "http://127.0.0.1:\(proxy.port)")
        XCTAssertEqual(challenges.first?.scheme, .basic)
        XCTAssertEqual(challenges.first?.realm, "Tinyproxy")
        XCTAssertEqual(challenges.first?.response.status, 407)
        XCTAssertNil(challenges.first?.refused)
        XCTAssertEqual(challenges.last?.refused, PocketCredential(username: "user", password: "guess"))

        // A handler that gives up: the 407 stays the error of its own, naming the proxy.
        let giving = try self.client(proxy: proxy.url()) {
            $0.handling.proxyAuthentication = PocketAuthentication { _ in nil }
        }
        let e = await assertPocketError(.proxyAuthenticationRequired) {
            try await giving.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
        XCTAssertTrue(e?.message.contains("127.0.0.1:\(proxy.port)") ?? false, e?.message ?? "")
        XCTAssertEqual(e?.response?.status, 407)
        XCTAssertEqual(e?.response?.headers["Proxy-Authenticate"], "Basic realm=\"Tinyproxy\"")
        try await client.shutdown()
        try await giving.shutdown()
    }

    func testWrongProxyCredentialsAreSentOnceAndNoneGoElsewhere() async throws {
        let proxy = try tinyproxy()
        let secure = try origin(tls: true)
        // The proxy URL's own credentials (Basic up front) are refused: not sent again.
        let wrong = try client(proxy: proxy.url(user: "user", password: "nope"))
        let e = await assertPocketError(.proxyAuthenticationRequired) {
            try await wrong.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
        XCTAssertTrue(e?.message.contains("refused the credentials") ?? false, e?.message ?? "")
        XCTAssertTrue(e?.message.contains("127.0.0.1:\(proxy.port)") ?? false, e?.message ?? "")
        let connects = proxy.log.components(separatedBy: "): CONNECT localhost").count - 1
        XCTAssertEqual(connects, 1, "one CONNECT, not a loop: \(proxy.log)")

        // Credentials given for another proxy are not sent to this one.
        let elsewhere = try client(proxy: proxy.url()) {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "user", password: "s3cret",
                                                                  origin: URL(string: "http://proxy.example:3128")!)
        }
        await assertPocketError(.proxyAuthenticationRequired) {
            try await elsewhere.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        }
        // …and with the right origin they are.
        let named = try client(proxy: proxy.url()) {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "user", password: "s3cret",
                                                                  origin: URL(string: proxy.url())!)
        }
        let ok = try await named.send(try PocketRequest("https://localhost:\(secure.port)/hello"))
        XCTAssertEqual(ok.status, 200)
        try await wrong.shutdown()
        try await elsewhere.shutdown()
        try await named.shutdown()
    }

    // MARK: Digest, the in-process server as the proxy

    func testDigestForwardProxyIsAnsweredOverBasicAndItsNonceCounted() async throws {
        let realm = ProxyDigestRealm()
        let proxyServer = try TestServer()
        addTeardownBlock { proxyServer.shutdown() }
        proxyServer.defaultHandler = { request in
            realm.challenge(request) ?? .text("proxied \(request.method) \(request.target)")
        }
        // The proxy URL's own credentials: Basic goes first, the Digest challenge is answered.
        let client = try client(proxy: "http://ada:s3cret@127.0.0.1:\(proxyServer.port)")
        let r1 = try await client.send(try PocketRequest("http://origin.example/a?x=1"))
        XCTAssertEqual(r1.status, 200)
        XCTAssertEqual(r1.text, "proxied GET http://origin.example/a?x=1")
        let sent = proxyServer.receivedRequests.map { $0.header("Proxy-Authorization") ?? "-" }
        XCTAssertEqual(sent.count, 2)
        XCTAssertTrue(sent[0].hasPrefix("Basic "), sent[0])
        XCTAssertTrue(sent[1].hasPrefix("Digest ") && sent[1].contains("algorithm=SHA-256"), "Digest over Basic, SHA-256 over MD5: \(sent[1])")
        XCTAssertTrue(sent[1].contains("uri=\"http://origin.example/a?x=1\""), "the absolute-form target: \(sent[1])")

        // Later requests answer at once with the next nonce count.
        let r2 = try await client.send(try PocketRequest("http://origin.example/b"))
        let r3 = try await client.send(PocketRequest(method: .post, url: URL(string: "http://origin.example/c")!, body: .text("hi")))
        XCTAssertEqual([r2.status, r3.status], [200, 200])
        XCTAssertEqual(proxyServer.requestCount, 4, "no new challenge")
        XCTAssertEqual(realm.accepted, ["00000001", "00000002", "00000003"])

        // The nonce expires: stale=true is answered once with the new nonce.
        realm.rotateNonce()
        let r4 = try await client.send(try PocketRequest("http://origin.example/d"))
        XCTAssertEqual(r4.status, 200)
        XCTAssertEqual(realm.accepted.suffix(1), ["00000001"])
        XCTAssertEqual(proxyServer.requestCount, 6)

        // A streamed response and a download answer the same way.
        realm.rotateNonce()
        let streamClient = try self.client(proxy: "http://127.0.0.1:\(proxyServer.port)") {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "ada", password: "s3cret", schemes: [.digest])
        }
        let streamed = try await streamClient.stream(try PocketRequest("http://origin.example/s"))
        XCTAssertEqual(streamed.status, 200)
        let streamedBody = try await streamed.body.collect(upTo: 1 << 20)
        XCTAssertEqual(String(decoding: streamedBody, as: UTF8.self), "proxied GET http://origin.example/s")
        let file = try temporaryDirectory("proxy-auth").appending(path: "d.txt")
        let downloaded = try await streamClient.download(try PocketRequest("http://origin.example/f"), to: file)
        XCTAssertEqual(downloaded.status, 200)
        XCTAssertEqual(try String(contentsOf: file, encoding: .utf8), "proxied GET http://origin.example/f")
        try await client.shutdown()
        try await streamClient.shutdown()
    }

    func testDigestLoopGuardOneShotBodiesAndTheErrorNamingTheProxy() async throws {
        let realm = ProxyDigestRealm()
        let proxyServer = try TestServer()
        addTeardownBlock { proxyServer.shutdown() }
        proxyServer.defaultHandler = { request in realm.challenge(request) ?? .text("proxied") }
        let wrong = try client(proxy: "http://127.0.0.1:\(proxyServer.port)") {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "ada", password: "wrong")
        }
        let e = await assertPocketError(.proxyAuthenticationRequired) {
            try await wrong.send(try PocketRequest("http://origin.example/x"))
        }
        XCTAssertEqual(proxyServer.requestCount, 2, "the loop guard: one answer per credential")
        XCTAssertTrue(e?.message.contains("proxy 127.0.0.1:\(proxyServer.port)") ?? false, e?.message ?? "")
        XCTAssertEqual(e?.response?.status, 407)

        // Streamed, the unanswerable 407 is the same error (not a response).
        let e2 = await assertPocketError(.proxyAuthenticationRequired) {
            try await wrong.stream(try PocketRequest("http://origin.example/y"))
        }
        XCTAssertTrue(e2?.message.contains("127.0.0.1:\(proxyServer.port)") ?? false, e2?.message ?? "")

        // No credentials at all: the 407 is the error at once.
        let anonymous = try client(proxy: "http://127.0.0.1:\(proxyServer.port)")
        proxyServer.resetStatistics()
        let e3 = await assertPocketError(.proxyAuthenticationRequired) {
            try await anonymous.send(try PocketRequest("http://origin.example/x"))
        }
        XCTAssertTrue(e3?.message.contains("wants credentials") ?? false, e3?.message ?? "")
        XCTAssertEqual(proxyServer.requestCount, 1)

        // A one-shot body cannot be sent again to answer.
        let right = try client(proxy: "http://127.0.0.1:\(proxyServer.port)") {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "ada", password: "s3cret")
        }
        let chunks = AsyncThrowingStream<Data, any Error> { c in
            c.yield(Data("part".utf8))
            c.finish()
        }
        let oneShot = await assertPocketError(.bodyNotReplayable) {
            try await right.send(PocketRequest(method: .post, url: URL(string: "http://origin.example/up")!,
                                               body: .stream(chunks, length: nil)))
        }
        XCTAssertEqual(oneShot?.response?.status, 407)
        try await wrong.shutdown()
        try await anonymous.shutdown()
        try await right.shutdown()
    }

    func testDigestOnATunnelAnswersTheConnect() async throws {
        let realm = ProxyDigestRealm()
        let proxyServer = try TestServer()
        addTeardownBlock { proxyServer.shutdown() }
        // A CONNECT proxy that checks the answer and then refuses the tunnel
        // with 502: the test server cannot tunnel, the 502 says the answer got through.
        proxyServer.defaultHandler = { request in
            realm.challenge(request) ?? .response(status: 502, body: Array("no tunnels here".utf8), closeConnection: true)
        }
        let client = try client(proxy: "http://127.0.0.1:\(proxyServer.port)") {
            $0.handling.proxyAuthentication = PocketAuthentication(username: "ada", password: "s3cret")
        }
        let e = await assertPocketError(.proxyConnectFailed) {
            try await client.send(try PocketRequest("https://secure.example:8443/x"))
        }
        XCTAssertEqual(e?.systemError, 502)
        let received = proxyServer.receivedRequests
        XCTAssertEqual(received.map(\.method), ["CONNECT", "CONNECT"])
        XCTAssertEqual(received.map(\.target), ["secure.example:8443", "secure.example:8443"])
        XCTAssertNil(received[0].header("Proxy-Authorization"))
        let answer = try XCTUnwrap(received[1].header("Proxy-Authorization"))
        XCTAssertTrue(answer.hasPrefix("Digest ") && answer.contains("uri=\"secure.example:8443\""), answer)
        XCTAssertEqual(realm.accepted, ["00000001"], "method CONNECT, the authority as uri")
        try await client.shutdown()
    }
}
