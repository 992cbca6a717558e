import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// A clock the tests move (the store's `clock`).
final class TestClock: Sendable {
    private let now: Lock<Date>
    init(_ start: Date) { now = Lock(start) }
    var date: Date { now.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var read: @Sendable () -> Date { { self.date } }
}

/// The cookie store through the in-process servers: the server sends
/// `Set-Cookie`, and the `Cookie` field it sees on the next request is
/// compared (RFC 6265's examples as a table); then the limits, public
/// suffixes, redirects, expiry, sharing and the Netscape file format.
final class CookieTests: XCTestCase {
    /// 2020-06-01T00:00:00Z: before the RFC's "Wed, 09 Jun 2021" expiry.
    static let rfcNow = Date(timeIntervalSince1970: 1_590_969_600)

    /// A plain and a TLS server answering every path with the Set-Cookie
    /// fields `next` holds, and a client that reaches both under any of
    /// `hosts` (address overrides).
    struct Rig {
        let plain: TestServer
        let tls: TestServer
        let client: PocketClient
        let next: Lock<[String]>

        func shutdown() async {
            try? await client.shutdown()
            plain.shutdown()
            tls.shutdown()
        }

        /// `GET url` (http:// on the plain server, https:// on the TLS one,
        /// ports filled in) after setting what the server answers; returns the
        /// Cookie field the server saw (nil: none) and checks it saw one at most.
        func exchange(_ url: String, sets: [String], file: StaticString = #filePath, line: UInt = #line) async throws -> String? {
            next.withLock { $0 = sets }
            let https = url.hasPrefix("https://")
            let server = https ? tls : plain
            let hostAndPath = url.dropFirst(https ? 8 : 7)
            let host = hostAndPath.prefix { $0 != "/" }
            let path = hostAndPath.dropFirst(host.count)
            let full = "\(https ? "https" : "http")://\(host):\(server.port)\(path.isEmpty ? "/" : path)"
            let before = server.receivedRequests.count
            _ = try await client.send(PocketRequest(url: URL(string: full)!))
            let received = server.receivedRequests
            XCTAssertEqual(received.count, before + 1, file: file, line: line)
            let cookies = received.last!.headerValues("Cookie")
            XCTAssertLessThanOrEqual(cookies.count, 1, "one Cookie field at most (RFC 6265 §5.4)", file: file, line: line)
            return cookies.first
        }
    }

    static let hosts = ["example.com", "www.example.com", "foo.example.com", "example.org", "www.example.co.uk",
                        "example.co.uk", "other.co.uk", "localhost", "user.github.io", "other.github.io"]

    func makeRig(store: PocketCookieStore, configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> Rig {
        let plain = try TestServer()
        let tls = try TestServer(tls: .localhost())
        let next = Lock<[String]>([])
        let handler: TestServer.Handler = { _ in
            .response(status: 200, headers: next.withLock { $0 }.map { ("Set-Cookie", $0) }, body: Array("ok".utf8))
        }
        plain.defaultHandler = handler
        tls.defaultHandler = handler
        let client = try makeClient { config in
            config.cookies = store
            config.tls.insecureSkipVerification = true
            config.addressOverrides = Self.hosts.flatMap { host in
                [plain.port, tls.port].map { try! PocketAddressOverride(host: host, port: UInt16($0), addresses: ["127.0.0.1"]) }
            }
            configure(&config)
        }
        return Rig(plain: plain, tls: tls, client: client, next: next)
    }

    /// One step of a table row: the request, what the server sets in its
    /// answer, and the Cookie field the server must see on that request.
    struct Step {
        var url: String
        var sets: [String] = []
        var expect: String?
    }

    /// RFC 6265 §3.1's examples and the §5 algorithms (default path, path
    /// and domain matching, the order of §5.4, dates of §5.1.1, Max-Age
    /// over Expires, public suffixes), each row with a store of its own.
    static let table: [(name: String, steps: [Step])] = [
        ("§3.1 a session cookie comes back", [
            Step(url: "http://example.com/", sets: ["SID=31d4d96e407aad42"]),
            Step(url: "http://example.com/", expect: "SID=31d4d96e407aad42"),
            Step(url: "http://www.example.com/", expect: nil), // host-only
        ]),
        ("§3.1 Path=/ and Domain=example.com: every path, the subdomains", [
            Step(url: "http://example.com/", sets: ["SID=31d4d96e407aad42; Path=/; Domain=example.com"]),
            Step(url: "http://www.example.com/docs/x", expect: "SID=31d4d96e407aad42"),
            Step(url: "http://example.com/", expect: "SID=31d4d96e407aad42"),
            Step(url: "http://example.org/", expect: nil),
        ]),
        ("§3.1 Secure and HttpOnly, and a Domain cookie", [
            Step(url: "https://example.com/", sets: ["SID=31d4d96e407aad42; Path=/; Secure; HttpOnly",
                                                     "lang=en-US; Path=/; Domain=example.com"]),
            Step(url: "https://example.com/", expect: "SID=31d4d96e407aad42; lang=en-US"),
            Step(url: "http://example.com/", expect: "lang=en-US"), // Secure: https only
            Step(url: "http://www.example.com/", expect: "lang=en-US"),
        ]),
        ("§3.1 Expires replaces, a past Expires deletes (same Domain: RFC 6265bis §5.7 counts the host-only flag)", [
            Step(url: "https://example.com/", sets: ["SID=31d4d96e407aad42; Path=/; Secure; HttpOnly",
                                                     "lang=en-US; Path=/; Domain=example.com"]),
            Step(url: "https://example.com/", sets: ["lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Domain=example.com"],
                 expect: "SID=31d4d96e407aad42; lang=en-US"),
            Step(url: "https://example.com/", expect: "SID=31d4d96e407aad42; lang=en-US"),
            Step(url: "http://www.example.com/", expect: "lang=en-US"),
            Step(url: "https://example.com/", sets: ["lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Domain=example.com"],
                 expect: "SID=31d4d96e407aad42; lang=en-US"),
            Step(url: "https://example.com/", expect: "SID=31d4d96e407aad42"),
        ]),
        ("RFC 6265bis §5.7: a host-only cookie and a Domain one of the same name are two cookies", [
            Step(url: "https://example.com/", sets: ["lang=fr; Domain=example.com", "lang=de"]),
            Step(url: "https://example.com/", expect: "lang=fr; lang=de"),
            Step(url: "http://www.example.com/", expect: "lang=fr"),
            Step(url: "https://example.com/", sets: ["lang=; Max-Age=0"], expect: "lang=fr; lang=de"),
            Step(url: "https://example.com/", expect: "lang=fr"),
        ]),
        ("§5.1.4 default path and path-match", [
            Step(url: "http://example.com/docs/index.html", sets: ["a=1"]),
            Step(url: "http://example.com/docs", expect: "a=1"),
            Step(url: "http://example.com/docs/x/y", expect: "a=1"),
            Step(url: "http://example.com/docsmore", expect: nil),
            Step(url: "http://example.com/", expect: nil),
        ]),
        ("§5.2.4 a Path not starting with / is the default path", [
            Step(url: "http://example.com/a/b", sets: ["p=1; Path=relative", "q=1; Path="]),
            Step(url: "http://example.com/a/c", expect: "p=1; q=1"),
            Step(url: "http://example.com/b", expect: nil),
        ]),
        ("§5.4 longer paths first, then earlier creation", [
            Step(url: "http://example.com/a/b/c", sets: ["x=1; Path=/", "y=2; Path=/a/b", "z=3; Path=/a", "w=4; Path=/"]),
            Step(url: "http://example.com/a/b/c", expect: "y=2; z=3; x=1; w=4"),
            Step(url: "http://example.com/a/b/c", sets: ["x=5; Path=/"], expect: "y=2; z=3; x=1; w=4"),
            Step(url: "http://example.com/a/b/c", expect: "y=2; z=3; x=5; w=4"), // a replacement keeps its creation time
        ]),
        ("§5.2.3 a leading dot in Domain is ignored", [
            Step(url: "http://www.example.com/", sets: ["d=1; Domain=.example.com"]),
            Step(url: "http://example.com/", expect: "d=1"),
            Step(url: "http://foo.example.com/", expect: "d=1"),
        ]),
        ("§5.3 step 6 a Domain the host does not domain-match is refused", [
            Step(url: "http://www.example.com/", sets: ["e=1; Domain=example.org", "f=1; Domain=foo.example.com",
                                                        "g=1; Domain=ww.example.com"]),
            Step(url: "http://example.org/", expect: nil),
            Step(url: "http://foo.example.com/", expect: nil),
            Step(url: "http://www.example.com/", expect: nil),
        ]),
        ("§5.3 step 5 public suffixes: com, co.uk, github.io", [
            Step(url: "http://www.example.co.uk/", sets: ["g=1; Domain=co.uk", "h=1; Domain=example.co.uk"]),
            Step(url: "http://other.co.uk/", expect: nil),
            Step(url: "http://example.co.uk/", expect: "h=1"),
            Step(url: "http://www.example.com/", sets: ["i=1; Domain=com"]),
            Step(url: "http://example.com/", expect: nil),
            Step(url: "http://user.github.io/", sets: ["j=1; Domain=github.io"]),
            Step(url: "http://other.github.io/", expect: nil),
        ]),
        ("§5.3 step 5 a public suffix that is the host itself: host-only", [
            Step(url: "http://localhost/", sets: ["l=1; Domain=localhost"]),
            Step(url: "http://localhost/", expect: "l=1"),
        ]),
        ("§5.3 step 3 Max-Age wins over Expires", [
            Step(url: "http://example.com/", sets: ["m=1; Max-Age=0; Expires=Wed, 09 Jun 2100 10:18:14 GMT",
                                                    "n=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Max-Age=3600",
                                                    "o=1; Max-Age=-5", "r=1; Max-Age=12x"]),
            Step(url: "http://example.com/", expect: "n=1; r=1"),
        ]),
        ("§5.1.1 dates: RFC 850, asctime, garbage", [
            Step(url: "http://example.com/", sets: ["k1=1; Expires=Sunday, 06-Nov-94 08:49:37 GMT",
                                                    "k2=1; Expires=Sun Nov  6 08:49:37 2099",
                                                    "k3=1; Expires=garbage",
                                                    "k4=1; expires=Thu, 01 Jan 70 00:00:01 GMT",
                                                    "k5=1; Expires=31 Feb 2099 00:00:00"]),
            Step(url: "http://example.com/", expect: "k2=1; k3=1; k5=1"),
        ]),
        ("§5.2 a line without = or with an empty name is ignored; spaces trimmed", [
            Step(url: "http://example.com/", sets: ["novalue", "=x", " w = v  ; Path = / ", "empty="]),
            Step(url: "http://example.com/", expect: "w=v; empty="),
        ]),
        ("one name, two paths: both, the longer path first", [
            Step(url: "http://example.com/p/q", sets: ["s=1; Path=/", "s=2; Path=/p"]),
            Step(url: "http://example.com/p/q", expect: "s=2; s=1"),
            Step(url: "http://example.com/", expect: "s=1"),
        ]),
        ("RFC 6265bis: Secure only from https; http cannot shadow it", [
            Step(url: "http://example.com/", sets: ["sec=1; Secure"]),
            Step(url: "https://example.com/", sets: ["t=1; Secure"], expect: nil),
            Step(url: "http://example.com/", sets: ["t=2"], expect: nil),
            Step(url: "https://example.com/", expect: "t=1"),
        ]),
        ("RFC 6265bis: __Secure- and __Host- prefixes", [
            Step(url: "https://example.com/", sets: ["__Host-a=1; Secure; Path=/", "__Host-b=1; Secure; Path=/; Domain=example.com",
                                                     "__Host-c=1; Secure; Path=/x", "__Secure-d=1", "__Secure-e=1; Secure"]),
            Step(url: "https://example.com/", expect: "__Host-a=1; __Secure-e=1"),
        ]),
        ("SameSite is kept, not enforced", [
            Step(url: "http://example.com/", sets: ["ss=1; SameSite=Strict", "sl=1; SameSite=Lax", "sn=1; SameSite=None"]),
            Step(url: "http://example.com/", expect: "ss=1; sl=1; sn=1"),
        ]),
    ]

    func testRFC6265ExamplesThroughTheServer() async throws {
        for row in Self.table {
            let store = PocketCookieStore(clock: { CookieTests.rfcNow })
            let rig = try makeRig(store: store)
            for (i, step) in row.steps.enumerated() {
                let seen = try await rig.exchange(step.url, sets: step.sets)
                XCTAssertEqual(seen, step.expect, "\(row.name), step \(i + 1): \(step.url)")
            }
            await rig.shutdown()
        }
    }

    func testSameSiteAndHttpOnlyAreKept() throws {
        let store = PocketCookieStore()
        let url = URL(string: "https://example.com/")!
        store.store("a=1; SameSite=Lax; HttpOnly; Secure", from: url)
        store.store("b=1; SameSite=bogus", from: url)
        let cookies = store.cookies(for: url)
        XCTAssertEqual(cookies.map(\.sameSite), [.lax, nil])
        XCTAssertEqual(cookies.map(\.httpOnly), [true, false])
        XCTAssertEqual(cookies.map(\.secure), [true, false])
    }

    // MARK: limits

    func testCookieSizeLimit() {
        let store = PocketCookieStore()
        let url = URL(string: "http://example.com/")!
        // Name and value together (RFC 6265bis §5.6), as curl counts them.
        let fits = "a=" + String(repeating: "x", count: 4095)
        guard case .stored = store.store(fits, from: url) else { return XCTFail("4096 bytes of name and value fit") }
        XCTAssertEqual(store.store("b=" + String(repeating: "x", count: 4096), from: url), .rejected(.tooLarge(bytes: 4097)))
        // Attributes do not count.
        guard case .stored = store.store("c=" + String(repeating: "x", count: 4095) + "; Path=/; HttpOnly", from: url) else {
            return XCTFail("attributes are not part of the size")
        }
        // Every cookie stored survives its own file.
        let again = PocketCookieStore()
        again.importNetscape(store.netscapeFile())
        XCTAssertEqual(again.cookies(for: url).map(\.name), ["a", "c"])
        let small = PocketCookieStore(limits: .init(maxCookieBytes: 10))
        XCTAssertEqual(small.add(PocketCookie(name: "n", value: String(repeating: "v", count: 20), domain: "example.com")),
                       .rejected(.tooLarge(bytes: 21)), "name and value: 1 + 20 bytes")
    }

    func testPerDomainLimitEvictsTheLeastRecentlyUsed() {
        let clock = TestClock(Self.rfcNow)
        let store = PocketCookieStore(clock: clock.read)
        let url = URL(string: "http://example.com/")!
        for i in 0..<50 {
            store.store("c\(i)=\(i)", from: url)
            clock.advance(1)
        }
        XCTAssertEqual(store.count, 50)
        // c0 is used (sent) now: c1 becomes the least recently used.
        store.store("c0=0; Path=/", from: url)
        clock.advance(1)
        guard case .stored(let cookie, let evicted) = store.store("c50=50", from: url) else { return XCTFail() }
        XCTAssertEqual(cookie.name, "c50")
        XCTAssertEqual(evicted.map(\.name), ["c1"])
        XCTAssertEqual(store.count, 50)
        // Another domain has its own 50.
        store.store("other=1", from: URL(string: "http://example.org/")!)
        XCTAssertEqual(store.count, 51)
    }

    func testPerDomainLimitEvictsExpiredCookiesFirst() {
        let clock = TestClock(Self.rfcNow)
        let store = PocketCookieStore(limits: .init(maxCookiesPerDomain: 3), clock: clock.read)
        let url = URL(string: "http://example.com/")!
        store.store("old=1", from: url)
        clock.advance(1)
        store.store("short=1; Max-Age=5", from: url)
        clock.advance(1)
        store.store("new=1", from: url)
        clock.advance(10) // `short` has expired
        guard case .stored(_, let evicted) = store.store("newer=1", from: url) else { return XCTFail() }
        XCTAssertEqual(evicted.map(\.name), ["short"], "the expired one goes before the least recently used")
        XCTAssertEqual(store.cookieHeader(for: url), "old=1; new=1; newer=1")
    }

    func testTotalLimitEvictsAcrossDomains() {
        let clock = TestClock(Self.rfcNow)
        let store = PocketCookieStore(clock: clock.read)
        for d in 0..<60 {
            let url = URL(string: "http://host\(d).example/")!
            for i in 0..<50 {
                store.store("c\(i)=1", from: url)
            }
            clock.advance(1)
        }
        XCTAssertEqual(store.count, 3000)
        guard case .stored(_, let evicted) = store.store("one=more", from: URL(string: "http://late.example/")!) else {
            return XCTFail()
        }
        XCTAssertEqual(evicted.count, 1)
        XCTAssertEqual(evicted.first?.domain, "host0.example", "the least recently used of all")
        XCTAssertEqual(store.count, 3000)
        let small = PocketCookieStore(limits: .init(maxCookies: 2), clock: clock.read)
        small.store("a=1", from: URL(string: "http://a.example/")!)
        small.store("b=1", from: URL(string: "http://b.example/")!)
        small.store("c=1", from: URL(string: "http://c.example/")!)
        XCTAssertEqual(small.allCookies.map(\.name), ["b", "c"])
    }

    // MARK: public suffixes

    /// The rules where a differential run against curl's cookie engine
    /// (scripts/differential.py cookies) found Pocket apart from RFC 6265bis.
    func testIdentityTrailingDotAndPrefixCaseFollowRFC6265bis() {
        let store = PocketCookieStore()
        let url = URL(string: "http://example.com/")!
        // §5.7: the host-only flag is part of a cookie's identity.
        guard case .stored = store.store("a=1", from: url), case .stored = store.store("a=2; Domain=example.com", from: url) else {
            return XCTFail("both stored")
        }
        XCTAssertEqual(store.cookieHeader(for: url), "a=1; a=2")
        XCTAssertEqual(store.cookieHeader(for: URL(string: "http://sub.example.com/")!), "a=2")
        // §5.6: a Domain attribute with a trailing dot domain-matches no host without one.
        XCTAssertEqual(store.store("b=1; Domain=example.com.", from: url), .rejected(.domainMismatch(domain: "example.com.")))
        // §4.1.3: prefixes in any case.
        XCTAssertEqual(store.store("__host-c=1; Path=/", from: url), .rejected(.prefixRequirements))
        XCTAssertEqual(store.store("__SECURE-c=1", from: url), .rejected(.prefixRequirements))
    }

    func testPublicSuffixRejection() {
        let store = PocketCookieStore()
        XCTAssertEqual(store.store("a=1; Domain=co.uk", from: URL(string: "http://www.example.co.uk/")!),
                       .rejected(.publicSuffix(domain: "co.uk")))
        XCTAssertEqual(store.store("a=1; Domain=com", from: URL(string: "http://example.com/")!),
                       .rejected(.publicSuffix(domain: "com")))
        XCTAssertEqual(store.store("a=1; Domain=COM.", from: URL(string: "http://example.com/")!),
                       .rejected(.publicSuffix(domain: "com.")), "the trailing dot is kept")
        XCTAssertEqual(store.store("a=1; Domain=github.io", from: URL(string: "https://user.github.io/")!),
                       .rejected(.publicSuffix(domain: "github.io")))
        guard case .stored(let c, _) = store.store("b=1; Domain=example.co.uk", from: URL(string: "http://www.example.co.uk/")!) else {
            return XCTFail("a registrable domain is fine")
        }
        XCTAssertFalse(c.hostOnly)
        guard case .stored(let h, _) = store.store("c=1; Domain=co.uk", from: URL(string: "http://co.uk/")!) else {
            return XCTFail("the host itself: host-only")
        }
        XCTAssertTrue(h.hostOnly)
        XCTAssertTrue(PublicSuffixList.isPublicSuffix("kawasaki.jp"))
        XCTAssertTrue(PublicSuffixList.isPublicSuffix("foo.kawasaki.jp"), "a wildcard rule")
        XCTAssertFalse(PublicSuffixList.isPublicSuffix("city.kawasaki.jp"), "an exception rule")
        XCTAssertFalse(PublicSuffixList.isPublicSuffix("example.com"))
        // An IP address is never domain-matched by another name.
        XCTAssertEqual(store.store("d=1; Domain=0.0.1", from: URL(string: "http://127.0.0.1/")!),
                       .rejected(.domainMismatch(domain: "0.0.1")))
    }

    // MARK: the request path

    func testCookiesSetOnRedirectHopsGoToTheNextHop() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/login") { _ in
            .response(status: 302, headers: [("Set-Cookie", "sid=abc; Path=/"), ("Location", "/step")])
        }
        server.route("/step") { _ in
            .response(status: 303, headers: [("Set-Cookie", "step=2; Path=/home"), ("Location", "/home")])
        }
        server.route("/home") { r in .text("home \(r.header("Cookie") ?? "-")") }
        let client = try makeClient { $0.cookies = PocketCookieStore() }
        defer { Task { try? await client.shutdown() } }
        let response = try await client.send(PocketRequest(url: url(server, "/login")))
        XCTAssertEqual(response.text, "home step=2; sid=abc")
        XCTAssertEqual(server.receivedRequests.map { $0.header("Cookie") ?? "-" }, ["-", "sid=abc", "step=2; sid=abc"])
        // A stream and a download take the same path.
        let stream = try await client.stream(PocketRequest(url: url(server, "/home")))
        let body = try await stream.body.collect(upTo: 1 << 20)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "home step=2; sid=abc")
    }

    func testCrossOriginRedirectDropsTheCallersCookieButNotTheStoresOwn() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let port = server.port
        server.route("/start") { _ in
            .response(status: 302, headers: [("Set-Cookie", "here=1"), ("Location", "http://localhost:\(port)/there")])
        }
        server.route("/there") { _ in .text("there") }
        let store = PocketCookieStore()
        store.store("local=1", from: URL(string: "http://localhost:\(port)/")!)
        let client = try makeClient { $0.cookies = store }
        defer { Task { try? await client.shutdown() } }
        var request = PocketRequest(url: url(server, "/start"))
        request.headers["Cookie"] = "mine=secret"
        _ = try await client.send(request)
        let seen = server.receivedRequests.map { $0.headerValues("Cookie") }
        XCTAssertEqual(seen, [["mine=secret"], ["local=1"]], "the caller's field stays with its origin; the store's cookies follow their own rules")
    }

    func testTheCallersCookieFieldIsMergedAndWins() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/") { r in .text(r.header("Cookie") ?? "-") }
        let store = PocketCookieStore()
        let base = URL(string: server.url("/"))!
        store.store("SID=stored", from: base)
        store.store("other=y", from: base)
        let client = try makeClient { $0.cookies = store }
        defer { Task { try? await client.shutdown() } }
        var request = PocketRequest(url: base)
        request.headers["Cookie"] = "mine=1; SID=override"
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "other=y; mine=1; SID=override")
        XCTAssertEqual(server.receivedRequests.last?.headerValues("Cookie").count, 1)
    }

    func testSecureCookiesAreNotSentOverHTTPEvenToLoopbackByDefault() async throws {
        let rigStore = PocketCookieStore()
        let rig = try makeRig(store: rigStore)
        _ = try await rig.exchange("https://localhost/", sets: ["s=1; Secure", "p=1"])
        let overHTTP = try await rig.exchange("http://localhost/", sets: [])
        XCTAssertEqual(overHTTP, "p=1")
        let overHTTPS = try await rig.exchange("https://localhost/", sets: [])
        XCTAssertEqual(overHTTPS, "s=1; p=1")
        await rig.shutdown()
        // curl's (and browsers') loopback rule, when asked for.
        let loopback = PocketCookieStore(treatsLoopbackAsSecure: true)
        XCTAssertEqual(loopback.store("s=1; Secure", from: URL(string: "http://127.0.0.1/")!).isStored, true)
        XCTAssertEqual(loopback.cookieHeader(for: URL(string: "http://127.0.0.1/")!), "s=1")
        XCTAssertEqual(loopback.store("s=1; Secure", from: URL(string: "http://example.com/")!),
                       .rejected(.secureFromInsecureOrigin))
    }

    func testExpiryAndDeletion() async throws {
        let clock = TestClock(Self.rfcNow)
        let store = PocketCookieStore(clock: clock.read)
        let rig = try makeRig(store: store)
        _ = try await rig.exchange("http://example.com/", sets: ["short=1; Max-Age=60", "long=1; Max-Age=3600", "session=1"])
        var seen = try await rig.exchange("http://example.com/", sets: [])
        XCTAssertEqual(seen, "short=1; long=1; session=1")
        clock.advance(61)
        seen = try await rig.exchange("http://example.com/", sets: ["long=; Max-Age=0"])
        XCTAssertEqual(seen, "long=1; session=1")
        seen = try await rig.exchange("http://example.com/", sets: [])
        XCTAssertEqual(seen, "session=1")
        XCTAssertEqual(store.count, 1, "expired cookies are removed when met")
        store.removeSessionCookies()
        seen = try await rig.exchange("http://example.com/", sets: [])
        XCTAssertNil(seen)
        XCTAssertEqual(store.store("gone=1; Max-Age=0", from: URL(string: "http://example.com/")!), .expired(removed: false))
        await rig.shutdown()
    }

    func testOneStoreSharedByClientsAndManyTasks() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { r in
            let name = String(r.path.dropFirst())
            return .response(status: 200, headers: [("Set-Cookie", "\(name)=1; Path=/")], body: Array((r.header("Cookie") ?? "").utf8))
        }
        let store = PocketCookieStore(limits: .init(maxCookiesPerDomain: 1000))
        let a = try makeClient { $0.cookies = store }
        let b = try makeClient { $0.cookies = store }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<16 {
                group.addTask {
                    for i in 0..<10 {
                        _ = try await (t % 2 == 0 ? a : b).send(PocketRequest(url: URL(string: server.url("/t\(t)_\(i)"))!))
                    }
                }
                group.addTask {
                    // The store's own API at the same time.
                    for i in 0..<50 {
                        store.store("direct\(t)_\(i)=1", from: URL(string: "http://example.com/")!)
                        _ = store.cookieHeader(for: URL(string: "http://example.com/")!)
                        if i % 2 == 0 { store.remove(name: "direct\(t)_\(i)", domain: "example.com", path: "/") }
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(store.cookies(for: URL(string: server.url("/"))!).count, 160)
        XCTAssertEqual(store.cookies(for: URL(string: "http://example.com/")!).count, 16 * 25)
        XCTAssertEqual(store.count, 160 + 16 * 25)
        XCTAssertEqual(store.allCookies.count, store.count)
        // The last request of a task carries every cookie its earlier ones set.
        let last = server.receivedRequests.filter { $0.path == "/t3_9" }.first?.header("Cookie") ?? ""
        for i in 0..<9 { XCTAssertTrue(last.contains("t3_\(i)=1"), last) }
        try await a.shutdown()
        try await b.shutdown()
    }

    func testWithoutAStoreNothingIsKept() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { _ in .response(status: 200, headers: [("Set-Cookie", "a=1")]) }
        let client = try makeClient()
        defer { Task { try? await client.shutdown() } }
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        _ = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(server.receivedRequests.map { $0.header("Cookie") }, [nil, nil])
    }

    // MARK: dates and parsing

    func testCookieDateAlgorithm() {
        func date(_ s: String) -> Int64? {
            SetCookieLine.parseDate(Array(s.utf8)[...]).map { Int64($0.timeIntervalSince1970) }
        }
        XCTAssertEqual(date("Sun, 06 Nov 1994 08:49:37 GMT"), 784_111_777)
        XCTAssertEqual(date("Sunday, 06-Nov-94 08:49:37 GMT"), 784_111_777)
        XCTAssertEqual(date("Sun Nov  6 08:49:37 1994"), 784_111_777)
        XCTAssertEqual(date("Wed, 09 Jun 2021 10:18:14 GMT"), 1_623_233_894)
        XCTAssertEqual(date("09 Jun 2021 10:18:14"), 1_623_233_894, "any order, no weekday")
        XCTAssertEqual(date("Thu, 01 Jan 70 00:00:01 GMT"), 1)
        XCTAssertEqual(date("1 jAN 2069 00:00:00"), date("01 Jan 69 00:00:00"), "two-digit 0-69 is 20xx")
        XCTAssertEqual(date("Tue, 29 Feb 2000 12:00:00"), 951_825_600)
        XCTAssertNil(date("Thu, 29 Feb 2001 12:00:00"), "no such day")
        XCTAssertNil(date("Thu, 01 Jan 1600 00:00:00"), "before 1601")
        XCTAssertNil(date("Thu, 01 Jan 2000 24:00:00"), "hour 24")
        XCTAssertNil(date("Thu, 32 Jan 2000 00:00:00"))
        XCTAssertNil(date("Thu, 01 Jan 2000"), "no time")
        XCTAssertNil(date("garbage"))
        XCTAssertNil(date(""))
        XCTAssertEqual(SetCookieLine.parseMaxAge(Array("3600".utf8)[...]), 3600)
        XCTAssertEqual(SetCookieLine.parseMaxAge(Array("-1".utf8)[...]), 0)
        XCTAssertNil(SetCookieLine.parseMaxAge(Array("1.5".utf8)[...]))
        XCTAssertNil(SetCookieLine.parseMaxAge(Array("".utf8)[...]))
        XCTAssertEqual(SetCookieLine.parseMaxAge(Array("99999999999999999999999".utf8)[...]), Int64.max)
    }

    func testMatchingAlgorithms() {
        XCTAssertEqual(PocketCookieStore.defaultPath(""), "/")
        XCTAssertEqual(PocketCookieStore.defaultPath("/"), "/")
        XCTAssertEqual(PocketCookieStore.defaultPath("/docs"), "/")
        XCTAssertEqual(PocketCookieStore.defaultPath("/docs/index.html"), "/docs")
        XCTAssertEqual(PocketCookieStore.defaultPath("/a/b/"), "/a/b")
        XCTAssertTrue(PocketCookieStore.pathMatches("/docs/x", "/docs"))
        XCTAssertTrue(PocketCookieStore.pathMatches("/docs/x", "/docs/"))
        XCTAssertTrue(PocketCookieStore.pathMatches("/docs", "/docs"))
        XCTAssertFalse(PocketCookieStore.pathMatches("/docsx", "/docs"))
        XCTAssertFalse(PocketCookieStore.pathMatches("/", "/docs"))
        XCTAssertTrue(PocketCookieStore.domainMatches("www.example.com", "example.com", hostIsIP: false))
        XCTAssertFalse(PocketCookieStore.domainMatches("wwwexample.com", "example.com", hostIsIP: false))
        XCTAssertFalse(PocketCookieStore.domainMatches("1.2.3.4", "2.3.4", hostIsIP: true))
        XCTAssertTrue(PocketCookieStore.domainMatches("1.2.3.4", "1.2.3.4", hostIsIP: true))
        // Bytes, not Characters: "e" + U+0301 is canonically "\u{E9}", but another path and domain.
        XCTAssertFalse(PocketCookieStore.pathMatches("/\u{E9}x", "/e\u{301}"))
        XCTAssertFalse(PocketCookieStore.pathMatches("/\u{E9}", "/e\u{301}"))
        XCTAssertFalse(PocketCookieStore.domainMatches("a.\u{E9}.com", "e\u{301}.com", hostIsIP: false))
        XCTAssertTrue(PocketCookieStore.pathMatches("/\u{E9}/x", "/\u{E9}"))
        XCTAssertEqual(PocketCookieStore.defaultPath("/a/\u{301}b"), "/a")
        // A dot followed by a combining mark is still the dot a domain cookie begins with.
        XCTAssertEqual(PocketCookie(name: "a", value: "1", domain: ".\u{301}x.example").domain, "\u{301}x.example")
    }

    /// A server sets a Secure cookie whose path is "/e" + U+0301, then, over
    /// http, one of the same name for "/\u{E9}x": the "leave secure cookies
    /// alone" check compares the two paths. By Character the old path was a
    /// prefix of the new one, and the byte after it was read past the end:
    /// the process trapped.
    func testPathsThatAreCanonicallyEqualAreNotTheSamePath() {
        let store = PocketCookieStore()
        for (line, url) in [("a=1; Secure; Path=/e\u{301}", "https://example.com/"), ("a=2; Path=/\u{E9}x", "http://example.com/")] {
            guard case .stored = store.store(line, from: URL(string: url)!) else { return XCTFail("not stored: \(line)") }
        }
        // Two cookies, each with its own path's bytes (String's == would call "/e\u{301}" and "/\u{E9}" equal).
        XCTAssertEqual(Set(store.allCookies.map { Array($0.path.utf8) }), Set(["/e\u{301}", "/\u{E9}x"].map { Array($0.utf8) }))
    }

    // MARK: Netscape files

    func testNetscapeRoundTrip() {
        let clock = TestClock(Self.rfcNow)
        let store = PocketCookieStore(clock: clock.read)
        let https = URL(string: "https://www.example.com/app/page")!
        store.store("session=s1", from: https)
        store.store("persist=p1; Max-Age=86400; HttpOnly", from: https)
        store.store("dom=d1; Domain=example.com; Path=/; Secure", from: https)
        store.store("deep=x; Path=/app/deeper", from: https)
        store.store("empty=", from: https)
        store.store("gone=1; Max-Age=5", from: https)
        clock.advance(10) // `gone` expires: not written
        let text = store.netscapeFile()
        XCTAssertTrue(text.hasPrefix("# Netscape HTTP Cookie File\n"))
        XCTAssertTrue(text.contains("\n#HttpOnly_www.example.com\tFALSE\t/app\tFALSE\t1591056000\tpersist\tp1\n"), text)
        XCTAssertTrue(text.contains("\n.example.com\tTRUE\t/\tTRUE\t0\tdom\td1\n"), text)
        XCTAssertTrue(text.contains("\nwww.example.com\tFALSE\t/app\tFALSE\t0\tempty\t\n"), text)
        XCTAssertFalse(text.contains("gone"))
        let lines = text.split(separator: "\n").filter { !$0.hasPrefix("# ") }
        XCTAssertEqual(lines.first.map { $0.hasSuffix("empty\t") }, true, "newest first, as curl writes")

        let copy = PocketCookieStore(clock: clock.read)
        let summary = copy.importNetscape(text)
        XCTAssertEqual(summary.imported, 5)
        XCTAssertEqual(summary.malformed, 0)
        func strip(_ c: PocketCookie) -> String { "\(c)" }
        XCTAssertEqual(copy.allCookies.map(strip), store.allCookies.map(strip))
        XCTAssertEqual(copy.cookieHeader(for: https), store.cookieHeader(for: https), "the same Cookie field, in the same order")
        XCTAssertEqual(copy.netscapeFile(), text)

        let junked = PocketCookieStore(clock: clock.read)
        let j = junked.importNetscape(text, dropSessionCookies: true)
        XCTAssertEqual(j.imported, 1)
        XCTAssertEqual(j.sessionCookiesDropped, 4)
        XCTAssertEqual(junked.allCookies.map(\.name), ["persist"])
    }

    func testNetscapeImportSkipsMalformedLinesWithACount() {
        let store = PocketCookieStore(clock: { CookieTests.rfcNow })
        let file = """
            # Netscape HTTP Cookie File
            garbage line here
            example.com\tFALSE\t/\tFALSE\t0\tok\t1
            not\tenough
            example.com\tFALSE\t/\tFALSE\tabc\tbadexpiry\t1
            example.com\tFALSE\t/\tFALSE\t0\tnovalue
            example.com\tFALSE\tnoslash\tFALSE\t0\tbadpath\t1
            \tFALSE\t/\tFALSE\t0\tnodomain\t1
            example.com\tFALSE\t/\tFALSE\t0\t\t1
            example.com\tFALSE\t/\tFALSE\t1\told\t1
            #HttpOnly_.example.com\tTRUE\t/\tTRUE\t4102444800\thttponly\tv\tw
            #HttpOnly_.example.com\tTRUE\t/\tTRUE\t4102444800\thttponly\tv
            example.com\tFALSE\t/\tFALSE\t0\tctl\tbell\u{7}
            Set-Cookie: header=1
            \r
            """ + "\r\n\u{0}\u{1}\u{2}\n"
        let summary = store.importNetscape(file)
        XCTAssertEqual(summary.imported, 3)
        XCTAssertEqual(summary.expired, 1)
        XCTAssertEqual(summary.malformed, 10)
        XCTAssertEqual(summary.malformedLines, [2, 4, 5, 7, 8, 9, 11, 13, 14, 16])
        XCTAssertEqual(store.allCookies.map(\.name).sorted(), ["httponly", "novalue", "ok"])
        let h = store.allCookies.first { $0.name == "httponly" }!
        XCTAssertTrue(h.httpOnly && h.secure && !h.hostOnly)
        XCTAssertEqual(h.domain, "example.com")
        // With an origin, Set-Cookie lines (a saved head) are stored.
        let headers = PocketCookieStore()
        let s = headers.importNetscape("HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nset-cookie: b=2; Domain=com\r\n\r\n",
                                       setCookieOrigin: URL(string: "http://example.com/")!)
        XCTAssertEqual(s.imported, 1)
        XCTAssertEqual(s.rejected, 1)
        XCTAssertEqual(s.malformed, 0)
        XCTAssertEqual(headers.cookieHeader(for: URL(string: "http://example.com/x")!), "a=1")
        // The largest expiry a file can hold survives a round trip.
        let far = PocketCookieStore()
        XCTAssertEqual(far.importNetscape("example.com\tFALSE\t/\tFALSE\t9223372036854775807\tfar\t1\n").imported, 1)
        XCTAssertTrue(far.netscapeFile().contains("\t9223372036854775807\tfar\t1\n"), far.netscapeFile())
        // A domain that is no host name is refused: written back, `.Set-Cookie: x` would read as a header line.
        let odd = PocketCookieStore()
        let o = odd.importNetscape(".Set-Cookie: e__Secure-x.example\tFALSE\t/\tFALSE\t4102444800\tlang\ten\n"
            + "a b.example\tFALSE\t/\tFALSE\t0\tspace\t1\n::1\tFALSE\t/\tFALSE\t0\tv6\t1\n"
            + "[::1]\tFALSE\t/\tFALSE\t0\tv6b\t1\n127.0.0.1\tFALSE\t/\tFALSE\t0\tv4\t1\n"
            // An empty label: `..example.com` would be written back as
            // `.example.com` and read as a domain cookie of `example.com`.
            + "..example.com\tFALSE\t/\tFALSE\t0\tdots\t1\na..example.com\tFALSE\t/\tFALSE\t0\tinner\t1\n")
        XCTAssertEqual(o.malformedLines, [1, 2, 6, 7])
        XCTAssertEqual(odd.allCookies.map(\.name).sorted(), ["v4", "v6", "v6b"])
        let back = PocketCookieStore()
        XCTAssertEqual(back.importNetscape(odd.netscapeFile()).imported, 3, "every cookie it keeps survives a round trip")
        // Random bytes never crash it.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in
                [UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "#"), UInt8(ascii: "/"), UInt8(ascii: "0"),
                 UInt8.random(in: 0...255, using: &generator)].randomElement(using: &generator)!
            }
            _ = PocketCookieStore().importNetscape(String(decoding: bytes, as: UTF8.self))
        }
    }

    func testNetscapeFilesOnDisk() throws {
        let dir = try temporaryDirectory("cookies")
        let store = PocketCookieStore()
        store.store("a=1; Max-Age=600", from: URL(string: "http://example.com/")!)
        let path = dir.appendingPathComponent("jar.txt").path
        try store.exportNetscape(toFile: path)
        let copy = PocketCookieStore()
        XCTAssertEqual(try copy.importNetscape(contentsOfFile: path).imported, 1)
        XCTAssertEqual(copy.cookieHeader(for: URL(string: "http://example.com/")!), "a=1")
        XCTAssertThrowsError(try copy.importNetscape(contentsOfFile: dir.appendingPathComponent("none").path)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .fileReadFailed)
        }
        XCTAssertThrowsError(try store.exportNetscape(toFile: dir.appendingPathComponent("no/such/dir").path)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .fileWriteFailed)
        }
    }
}

extension PocketCookieStore.Outcome {
    var isStored: Bool {
        if case .stored = self { return true }
        return false
    }
}
