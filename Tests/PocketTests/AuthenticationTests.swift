import Foundation
import XCTest
import Logging
@testable import Pocket
import PocketTestSupport

/// A server side of Digest (SHA-256, qop=auth) and Basic for the in-process
/// server: it checks each `Authorization` against the password with the test
/// support's own SHA-256 and keeps what it saw.
final class DigestRealm: Sendable {
    struct State {
        var nonce = "n-1"
        var nonces = 1
        var seenCounts: [String] = []
        var challenges = 0
    }

    let realm = "pocket@test"
    let user: String
    let password: String
    let state = Lock(State())

    init(user: String = "ada", password: String = "s3cret") {
        self.user = user
        self.password = password
    }

    static func h(_ s: String) -> String { SHA256Digest.hex(Array(s.utf8)) }

    /// Makes the current nonce stale: the next answer to it gets `stale=true`.
    func rotateNonce() {
        state.withLock { s in
            s.nonces += 1
            s.nonce = "n-\(s.nonces)"
        }
    }

    var counts: [String] { state.withLock { $0.seenCounts } }
    var challenges: Int { state.withLock { $0.challenges } }

    /// 200 for a valid answer, else 401 with Digest SHA-256, Digest MD5 and Basic offered.
    func reply(_ request: TestServer.Request, body: String = "welcome") -> TestServer.Reply {
        let nonce = state.withLock { $0.nonce }
        var stale = false
        if let value = request.header("Authorization") {
            if value.hasPrefix("Basic ") {
                if value == "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() { return .text(body) }
            } else if let answer = AuthChallenge.parse([value]).first, answer.scheme == "digest" {
                let p = answer.parameters
                let ha1 = Self.h("\(user):\(realm):\(password)")
                let ha2 = Self.h("\(request.method):\(p["uri"] ?? "")")
                let expected = Self.h("\(ha1):\(p["nonce"] ?? ""):\(p["nc"] ?? ""):\(p["cnonce"] ?? ""):auth:\(ha2)")
                let valid = p["username"] == user && p["realm"] == realm && p["uri"] == request.target
                    && p["algorithm"] == "SHA-256" && p["qop"] == "auth" && p["response"] == expected && p["opaque"] == "op\"aque"
                if valid {
                    state.withLock { $0.seenCounts.append(p["nc"] ?? "") }
                    if p["nonce"] == nonce { return .text(body) }
                    stale = true
                }
            }
        }
        state.withLock { $0.challenges += 1 }
        let digest = "realm=\"\(realm)\", qop=\"auth, auth-int\", nonce=\"\(nonce)\", opaque=\"op\\\"aque\"" + (stale ? ", stale=true" : "")
        return .response(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"\(realm)\""),
                                                ("WWW-Authenticate", "Digest \(digest), algorithm=MD5, Digest \(digest), algorithm=SHA-256")],
                         body: Array("who are you?".utf8))
    }
}

/// 401 challenges answered on the one request path: Basic and Digest, per
/// client and per request, with the loop guard and the origin rules.
final class AuthenticationTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws {
        server = try TestServer()
    }

    override func tearDown() async throws {
        server.shutdown()
        server = nil
    }

    // MARK: Digest by the RFC's own examples

    /// RFC 7616 §3.9.1: the same request answered with MD5 and SHA-256.
    func testRFC7616ExamplesGiveTheRFCResponses() throws {
        let challenge = #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
        let credential = PocketCredential(username: "Mufasa", password: "Circle of Life")
        let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
        for (algorithm, expected) in [("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
                                      ("MD5", "8ca523f5e9506fed4657c9700eebdbec")] {
            let parsed = AuthChallenge.parse([challenge.replacingOccurrences(of: "SHA-256", with: algorithm)])
            let digest = try XCTUnwrap(parsed.first.flatMap(DigestChallenge.init))
            let answer = try XCTUnwrap(digest.answer(credential, method: "GET", uri: "/dir/index.html", nc: 1, cnonce: cnonce))
            let fields = try XCTUnwrap(AuthChallenge.parse([answer]).first).parameters
            XCTAssertEqual(fields["response"], expected, algorithm)
            XCTAssertEqual(fields["nc"], "00000001")
            XCTAssertEqual(fields["qop"], "auth")
            XCTAssertEqual(fields["opaque"], "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS")
            XCTAssertEqual(fields["algorithm"], algorithm)
        }
        // RFC 2617 §3.5 (MD5, qop=auth): the older example.
        let old = AuthChallenge.parse([#"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#])
        let answer = try XCTUnwrap(DigestChallenge(try XCTUnwrap(old.first))?
            .answer(PocketCredential(username: "Mufasa", password: "Circle Of Life"), method: "GET", uri: "/dir/index.html",
                    nc: 1, cnonce: "0a4f113b"))
        XCTAssertTrue(answer.contains(#"response="6629fae49393a05397450978507c4ef1""#), answer)
    }

    func testChallengeParsing() {
        let all = AuthChallenge.parse([#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#,
                                       "Negotiate abc+/d==, Bearer", "Digest realm=\"x\", nonce=\"y\", algorithm=SHA-512-256"])
        XCTAssertEqual(all.map(\.scheme), ["newauth", "basic", "negotiate", "bearer", "digest"])
        XCTAssertEqual(all[0].parameters, ["realm": "apps", "type": "1", "title": #"Login to "apps""#])
        XCTAssertEqual(all[1].parameters, ["realm": "simple"])
        XCTAssertEqual(all[2].token68, "abc+/d==")
        XCTAssertNil(DigestChallenge(all[4]), "an algorithm Pocket does not know is not answered")
        XCTAssertNil(DigestChallenge(AuthChallenge.parse([#"Digest realm="x", nonce="y", qop="auth-int""#])[0]),
                     "auth-int alone is not answered")
        XCTAssertEqual(AuthChallenge.parse([#"Basic realm="unterminated"#]).map(\.scheme), ["basic"], "malformed: kept what parsed")
        XCTAssertEqual(AuthChallenge.parse(["", " , ,"]), [])
    }

    // MARK: through the in-process server

    func testDigestIsChosenOverBasicAndItsNonceIsCountedOnTheNextRequests() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0) }
        let client = try makeClient { $0.handling.authentication = PocketAuthentication(username: "ada", password: "s3cret") }
        let first = try await client.send(PocketRequest(url: url(server, "/secret")))
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.text, "welcome")
        XCTAssertEqual(server.requestCount, 2, "one challenge, one answer")
        let sent = try XCTUnwrap(server.receivedRequests.last?.header("Authorization"))
        XCTAssertTrue(sent.hasPrefix("Digest "), "Digest over Basic: \(sent)")
        XCTAssertTrue(sent.contains("algorithm=SHA-256"), "SHA-256 over MD5: \(sent)")

        // The next requests answer at once with the kept nonce, counted.
        for _ in 0..<2 { _ = try await client.send(PocketRequest(url: url(server, "/secret?page=2"))) }
        XCTAssertEqual(server.requestCount, 4, "no new challenge")
        XCTAssertEqual(realm.counts, ["00000001", "00000002", "00000003"])

        // The server's nonce expires: stale=true is answered with the new one.
        realm.rotateNonce()
        let after = try await client.send(PocketRequest(url: url(server, "/secret")))
        XCTAssertEqual(after.status, 200)
        XCTAssertEqual(server.requestCount, 6)
        XCTAssertEqual(realm.counts.suffix(2), ["00000004", "00000001"], "the stale nonce's count, then the new nonce's first")
        try await client.shutdown()
    }

    /// MTPocket's "the response keeps what was sent": the request in the
    /// response is the one sent last, with the `Authorization` that
    /// answered the challenge; middleware observe that request too, and the
    /// logging middleware redacts the field as it does any credential.
    func testTheResponseKeepsTheAuthorizationThatAnsweredTheChallenge() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0) }
        let records = Recorder<CapturedLog>()
        var logger = Logger(label: "auth") { _ in CapturingLogHandler(records: records) }
        logger.logLevel = .debug
        let observed = Lock<[String?]>([])
        let client = try makeClient {
            $0.handling.authentication = PocketAuthentication(username: "ada", password: "s3cret")
            $0.handling.middleware = [PocketClosureMiddleware(observe: { _, request, _ in
                observed.withLock { $0.append(request.headers["Authorization"]) }
            }), PocketLoggingMiddleware(logger: logger)]
        }
        var request = PocketRequest(url: url(server, "/secret"))
        request.headers["X-Mine"] = "kept"
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 200)
        let sent = try XCTUnwrap(server.receivedRequests.last?.header("Authorization"))
        XCTAssertEqual(response.request?.headers["Authorization"], sent, "the answer is in the response's request")
        XCTAssertEqual(response.request?.headers["X-Mine"], "kept")
        XCTAssertEqual(response.request?.url, request.url)
        XCTAssertNil(request.headers["Authorization"], "the caller's value is untouched")
        XCTAssertEqual(observed.withLock { $0 }, [sent], "middleware observe the request as sent")
        let logged = records.values.map { $0.message + " " + $0.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
            .joined(separator: "\n")
        XCTAssertTrue(logged.contains("Authorization: <redacted>"), logged)
        XCTAssertFalse(logged.contains("response="), "the Digest answer is not logged: \(logged)")

        // A preemptive Basic answer (no challenge) and a streamed response keep theirs too.
        var basic = PocketRequest(url: url(server, "/secret"))
        basic.authentication = PocketAuthentication(username: "ada", password: "s3cret", schemes: [.basic], preemptiveBasic: true)
        let r2 = try await client.send(basic)
        XCTAssertEqual(r2.request?.headers["Authorization"], "Basic " + Data("ada:s3cret".utf8).base64EncodedString())
        try await client.shutdown()
    }

    func testAWrongPasswordIsAnsweredOnceAndTheSecond401Returned() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0) }
        let client = try makeClient()
        var request = PocketRequest(url: url(server, "/secret"))
        request.authentication = PocketAuthentication(username: "ada", password: "wrong")
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(response.text, "who are you?")
        XCTAssertEqual(server.requestCount, 2, "the loop guard: one answer per credential")
        // With validation the 401 is the usual error, after the same two requests.
        var validated = request
        validated.validation = PocketValidation()
        await assertPocketError(.unacceptableStatus) { try await client.send(validated) }
        XCTAssertEqual(server.requestCount, 4)
        try await client.shutdown()
    }

    func testBasicOnlyAndPreemptiveBasic() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0) }
        let client = try makeClient()
        var request = PocketRequest(url: url(server, "/secret"))
        request.authentication = PocketAuthentication(username: "ada", password: "s3cret", schemes: [.basic])
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(server.receivedRequests.map { $0.header("Authorization")?.prefix(6) }, [nil, "Basic "])

        server.resetStatistics()
        request.authentication = PocketAuthentication(username: "ada", password: "s3cret", schemes: [.basic], preemptiveBasic: true)
        let r1 = try await client.send(request)
        XCTAssertEqual(r1.status, 200)
        XCTAssertEqual(server.requestCount, 1, "curl --basic: no challenge needed")

        // Sent up front and refused by a Basic challenge: not sent again (curl --basic makes one request).
        server.resetStatistics()
        request.authentication = PocketAuthentication(username: "ada", password: "wrong", schemes: [.basic], preemptiveBasic: true)
        let refused = try await client.send(request)
        XCTAssertEqual(refused.status, 401)
        XCTAssertEqual(server.requestCount, 1)
        try await client.shutdown()
    }

    func testAHandlerIsAskedAndToldWhatWasRefused() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0) }
        let client = try makeClient()
        let asked = Lock<[PocketAuthChallenge]>([])
        var request = PocketRequest(url: url(server, "/secret"))
        request.authentication = PocketAuthentication { challenge in
            asked.withLock { $0.append(challenge) }
            return challenge.refused == nil ? PocketCredential(username: "ada", password: "guess")
                                            : PocketCredential(username: "ada", password: "s3cret")
        }
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 200)
        let challenges = asked.withLock { $0 }
        XCTAssertEqual(challenges.count, 2)
        XCTAssertEqual(challenges.first?.scheme, .digest)
        XCTAssertEqual(challenges.first?.realm, "pocket@test")
        XCTAssertEqual(challenges.first?.response.status, 401)
        XCTAssertEqual(challenges.last?.refused?.password, "guess")
        XCTAssertEqual(server.requestCount, 3)

        // A handler that says nil lets the 401 through.
        request.authentication = PocketAuthentication { _ in nil }
        let r2 = try await client.send(request)
        XCTAssertEqual(r2.status, 401)
        try await client.shutdown()
    }

    func testCredentialsStayWithTheirOrigin() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0) }
        // Given for https on this host: never sent over http.
        let httpsOrigin = URL(string: "https://127.0.0.1:\(server.port)")!
        let client = try makeClient {
            $0.handling.authentication = PocketAuthentication(username: "ada", password: "s3cret", origin: httpsOrigin)
        }
        let r3 = try await client.send(PocketRequest(url: url(server, "/secret")))
        XCTAssertEqual(r3.status, 401)
        XCTAssertEqual(server.requestCount, 1)
        XCTAssertNil(server.receivedRequests.last?.header("Authorization"))

        // A redirect to another origin that challenges: not answered, and nothing goes there.
        let other = try TestServer()
        defer { other.shutdown() }
        let otherRealm = DigestRealm()
        other.route("/secret") { otherRealm.reply($0) }
        server.route("/away") { _ in .response(status: 302, headers: [("Location", other.url("/secret"))]) }
        var request = PocketRequest(url: url(server, "/away"))
        request.authentication = PocketAuthentication(username: "ada", password: "s3cret")
        let response = try await client.send(request)
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(other.requestCount, 1)
        XCTAssertTrue(other.receivedRequests.allSatisfy { $0.header("Authorization") == nil })
        try await client.shutdown()
    }

    func testAOneShotBodyCannotAnswerAChallenge() async throws {
        let realm = DigestRealm()
        server.route("/upload") { realm.reply($0) }
        let client = try makeClient()
        let chunks = AsyncThrowingStream<Data, any Error> { c in
            c.yield(Data("part".utf8))
            c.finish()
        }
        var request = PocketRequest(method: .put, url: url(server, "/upload"), body: .stream(chunks, length: nil))
        request.authentication = PocketAuthentication(username: "ada", password: "s3cret")
        let error = await assertPocketError(.bodyNotReplayable) { try await client.send(request) }
        XCTAssertEqual(error?.response?.status, 401)
        XCTAssertEqual(server.requestCount, 1)
        // A replayable body is sent again.
        request.body = .bytes(Data("part".utf8))
        let r4 = try await client.send(request)
        XCTAssertEqual(r4.status, 200)
        XCTAssertEqual(server.receivedRequests.last.map { String(decoding: $0.body, as: UTF8.self) }, "part")
        try await client.shutdown()
    }

    func testTheAnswerIsInsideOneAttemptOnEveryPath() async throws {
        let realm = DigestRealm()
        server.route("/secret") { realm.reply($0, body: String(repeating: "x", count: 4096)) }
        let observed = Lock<[Int]>([])
        let client = try makeClient { config in
            config.handling.authentication = PocketAuthentication(username: "ada", password: "s3cret")
            config.handling.retry = nil
            config.handling.middleware = [PocketClosureMiddleware(observe: { outcome, _, _ in
                if case .success(let r) = outcome { observed.withLock { $0.append(r.status) } }
            })]
        }
        let events = client.events()
        let r5 = try await client.send(PocketRequest(url: url(server, "/secret")))
        XCTAssertEqual(r5.status, 200)
        XCTAssertEqual(observed.withLock { $0 }, [200], "middleware see the answered outcome once")
        var states: [PocketTaskState] = []
        for await event in events {
            states.append(event.state)
            if event.state == .finished { break }
        }
        XCTAssertEqual(states, [.running, .finished], "not a retry")

        let streamed = try await client.stream(PocketRequest(url: url(server, "/secret?s")))
        XCTAssertEqual(streamed.status, 200)
        let collected = try await streamed.body.collect(upTo: 1 << 20)
        XCTAssertEqual(collected.count, 4096)
        let file = try temporaryDirectory("auth").appending(path: "secret.txt")
        let downloaded = try await client.download(PocketRequest(url: url(server, "/secret?d")), to: file)
        XCTAssertEqual(downloaded.status, 200)
        XCTAssertEqual(try Data(contentsOf: file).count, 4096)
        let queue = PocketRequestQueue(client: client)
        let r6 = try await queue.send(PocketRequest(url: url(server, "/secret?q")))
        XCTAssertEqual(r6.status, 200)
        try await client.shutdown()
    }
}
