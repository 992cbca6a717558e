import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Requests over Unix domain sockets: `http+unix`/`https+unix` URLs and the
/// socket-path option, against the in-process server listening on a socket
/// and nginx's own Unix socket.
final class UnixSocketTests: XCTestCase {
    /// A server on `<temp>/name.sock` answering `/host` with the Host field it got.
    private func unixServer(_ name: String = "s", tls: TestServer.TLSOptions? = nil) throws -> (TestServer, String) {
        let directory = try temporaryDirectory("pocket-unix")
        let path = directory.appendingPathComponent("\(name).sock").path
        let server = try TestServer(unixSocketPath: path, tls: tls)
        addTeardownBlock { server.shutdown() }
        server.route("/host") { request in .text("\(name) \(request.header("Host") ?? "-")") }
        server.route("/reset") { _ in .reset }
        server.route("/stall") { _ in .stall(milliseconds: 3_000) }
        return (server, path)
    }

    private static func encoded(_ path: String) -> String {
        path.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
    }

    func testHTTPUnixURLReusesOneConnectionAndSendsHostLocalhost() async throws {
        let (server, path) = try unixServer()
        let client = try makeClient()
        let url = "http+unix://\(Self.encoded(path))/host"
        let first = try await client.send(try PocketRequest(url))
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.text, "s localhost")
        XCTAssertFalse(first.timings.reusedConnection)
        for _ in 0..<3 {
            let again = try await client.send(try PocketRequest(url))
            XCTAssertEqual(again.text, "s localhost")
            XCTAssertTrue(again.timings.reusedConnection)
        }
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertEqual(server.unixBaseURL, "http+unix://\(Self.encoded(path))")
    }

    /// A server on TCP must not steer a request into a local socket (a
    /// Docker-style API listening there): every status, GET and a POST with a
    /// body, sent through `send`, `stream` and a download; and a socket's own
    /// redirect may not move to another socket either.
    func testARedirectNeverLeadsIntoAUnixSocket() async throws {
        let (unix, path) = try unixServer("docker")
        unix.route("/v1.43/containers/json") { _ in .text("containers") }
        let web = try TestServer()
        defer { web.shutdown() }
        let location = "http+unix://\(Self.encoded(path))/v1.43/containers/json"
        for status in [301, 302, 303, 307, 308] { web.routeRedirect("/\(status)", status, to: location) }
        web.routeRedirect("/https-unix", 302, to: "https+unix://\(Self.encoded(path))/v1.43/containers/json")
        let client = try makeClient()
        for status in [301, 302, 303, 307, 308] {
            var post = PocketRequest(method: .post, url: url(web, "/\(status)"))
            post.body = .text("{\"Image\":\"alpine\"}")
            for request in [PocketRequest(url: url(web, "/\(status)")), post] {
                let error = await assertPocketError(.forbiddenRedirect) { try await client.send(request) }
                XCTAssertEqual(error?.response?.status, status)
            }
        }
        _ = await assertPocketError(.forbiddenRedirect) { try await client.send(PocketRequest(url: url(web, "/https-unix"))) }
        _ = await assertPocketError(.forbiddenRedirect) {
            let streamed = try await client.stream(PocketRequest(url: url(web, "/302")))
            _ = try await streamed.body.collect(upTo: 1 << 20)
        }
        let file = try temporaryDirectory("pocket-unix-dl").appendingPathComponent("out")
        _ = await assertPocketError(.forbiddenRedirect) {
            _ = try await client.download(PocketRequest(url: url(web, "/302")), to: file)
        }
        XCTAssertEqual(unix.requestCount, 0, "nothing reached the Unix socket")

        // From one socket to another: refused; to the same socket: followed.
        let (other, otherPath) = try unixServer("other")
        unix.routeRedirect("/to-other", 302, to: "http+unix://\(Self.encoded(otherPath))/host")
        unix.routeRedirect("/to-self", 302, to: "/host")
        _ = await assertPocketError(.forbiddenRedirect) {
            try await client.send(try PocketRequest("http+unix://\(Self.encoded(path))/to-other"))
        }
        XCTAssertEqual(other.requestCount, 0)
        let same = try await client.send(try PocketRequest("http+unix://\(Self.encoded(path))/to-self"))
        XCTAssertEqual(same.text, "docker localhost")
    }

    func testSocketPathOptionKeepsTheURLsHostAndRequestBeatsClient() async throws {
        let (a, pathA) = try unixServer("a")
        let (b, pathB) = try unixServer("b")
        let client = try makeClient { $0.unixSocketPath = pathA }
        let plain = try await client.send(try PocketRequest("http://api.internal:8080/host"))
        XCTAssertEqual(plain.text, "a api.internal:8080", "the client's socket; Host from the URL")
        var request = try PocketRequest("http://api.internal/host")
        request.unixSocketPath = pathB
        let own = try await client.send(request)
        XCTAssertEqual(own.text, "b api.internal", "the request's socket wins over the client's")
        let url = try await client.send(try PocketRequest("http+unix://\(Self.encoded(pathB))/host"))
        XCTAssertEqual(url.text, "b localhost", "an http+unix URL's socket wins over the client's")
        XCTAssertEqual(a.acceptedConnections, 1)
        XCTAssertEqual(b.acceptedConnections, 2, "api.internal and localhost are two origins on b")
    }

    func testPoolKeysIncludeThePathAndHostIsConfigurable() async throws {
        let (a, pathA) = try unixServer("a")
        let (b, pathB) = try unixServer("b")
        let client = try makeClient()
        for i in 0..<6 {
            var request = try PocketRequest("http://localhost/host")
            request.unixSocketPath = i % 2 == 0 ? pathA : pathB
            let r = try await client.send(request)
            XCTAssertEqual(r.text, "\(i % 2 == 0 ? "a" : "b") localhost", "request \(i) reached its own socket")
        }
        XCTAssertEqual(a.acceptedConnections, 1)
        XCTAssertEqual(b.acceptedConnections, 1)
        // TCP to the same name is a third origin: never a Unix connection.
        let tcp = try TestServer()
        defer { tcp.shutdown() }
        tcp.route("/host") { _ in .text("tcp") }
        let overTCP = try await client.send(try PocketRequest("http://localhost:\(tcp.port)/host"))
        XCTAssertEqual(overTCP.text, "tcp")

        var named = try PocketRequest("http+unix://\(Self.encoded(pathA))/host")
        named.headers["Host"] = "docker"
        let r = try await client.send(named)
        XCTAssertEqual(r.text, "a docker", "a Host field of the request replaces localhost")
    }

    func testMissingRefusedAndTooLongEachHaveTheirCodeAndNameThePath() async throws {
        let directory = try temporaryDirectory("pocket-unix-errors")
        let client = try makeClient()
        let missing = directory.appendingPathComponent("missing.sock").path
        let e1 = await assertPocketError(.unixSocketNotFound) {
            try await client.send(try PocketRequest("http+unix://\(Self.encoded(missing))/"))
        }
        XCTAssertTrue(e1?.message.contains(missing) ?? false, e1?.message ?? "")
        // The engine's errno comes through as the underlying error and in the message.
        XCTAssertEqual((e1?.underlying as? POSIXError)?.code, .ENOENT, "\(String(describing: e1?.underlying))")
        XCTAssertTrue(e1?.message.contains(String(cString: strerror(ENOENT))) ?? false, e1?.message ?? "")

        // A regular file, and a socket file nobody listens on: refused.
        let file = directory.appendingPathComponent("plain").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let e2 = await assertPocketError(.unixSocketRefused) {
            var request = try PocketRequest("http://localhost/")
            request.unixSocketPath = file
            return try await client.send(request)
        }
        XCTAssertTrue(e2?.message.contains(file) ?? false, e2?.message ?? "")
        let (gone, gonePath) = try unixServer("gone")
        gone.shutdown() // the file stays; nothing listens
        let e3 = await assertPocketError(.unixSocketRefused) {
            try await client.send(try PocketRequest("http+unix://\(Self.encoded(gonePath))/"))
        }
        XCTAssertTrue(e3?.message.contains(gonePath) ?? false, e3?.message ?? "")

        let long = "/tmp/" + String(repeating: "d", count: 120) + ".sock"
        let e4 = await assertPocketError(.unixSocketPathTooLong) {
            var request = try PocketRequest("http://localhost/")
            request.unixSocketPath = long
            return try await client.send(request)
        }
        XCTAssertTrue(e4?.message.contains(long) ?? false, e4?.message ?? "")
        let noPath = await assertPocketError(.invalidURL) { try await client.send(try PocketRequest("http+unix:///x")) }
        XCTAssertTrue(noPath?.message.contains("socket path") ?? false, noPath?.message ?? "")
    }

    func testPermissionDeniedHasItsOwnCode() async throws {
        let (_, path) = try unixServer("locked")
        XCTAssertEqual(chmod(path, 0o700), 0)
        let client = try makeClient()
        let request = try PocketRequest("http+unix://\(Self.encoded(path))/host")
        let error: PocketError?
        if getuid() != 0 {
            XCTAssertEqual(chmod(path, 0), 0)
            error = await assertPocketError(.unixSocketPermissionDenied) { try await client.send(request) }
        } else {
            // Root passes permission checks: the loop thread, where the
            // connect happens, takes another file-system uid (setfsuid is
            // per thread, and leaving uid 0 drops its file capabilities).
            typealias SetFSUID = @convention(c) (UInt32) -> Int32
            let setfsuid = unsafeBitCast(dlsym(nil, "setfsuid"), to: SetFSUID.self) // not in the Glibc module
            error = await withTaskExecutorPreference(client.executor) {
                _ = setfsuid(65534)
                defer { _ = setfsuid(0) }
                return await assertPocketError(.unixSocketPermissionDenied) { try await client.send(request) }
            }
        }
        XCTAssertTrue(error?.message.contains(path) ?? false, error?.message ?? "")
        let allowed = try await client.send(request)
        XCTAssertEqual(allowed.text, "locked localhost", "the same socket with permission")
    }

    func testResetAndStallOverAUnixSocket() async throws {
        let (_, path) = try unixServer("hostile")
        let client = try makeClient { $0.timeouts.read = .milliseconds(300) }
        do {
            _ = try await client.send(try PocketRequest("http+unix://\(Self.encoded(path))/reset"))
            XCTFail("a reset connection is not a response")
        } catch let error as PocketError {
            XCTAssertTrue([.connectionReset, .closedBeforeResponse].contains(error.code), "\(error)")
        }
        let started = ContinuousClock.now
        await assertPocketError(.readTimeout) {
            try await client.send(try PocketRequest("http+unix://\(Self.encoded(path))/stall"))
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
        let fine = try await client.send(try PocketRequest("http+unix://\(Self.encoded(path))/host"))
        XCTAssertEqual(fine.text, "hostile localhost")
    }

    func testHTTPSUnixVerifiesTheOriginName() async throws {
        let certificates = try TestCertificates.shared
        let (server, path) = try unixServer("tls", tls: try .localhost())
        let client = try makeClient { $0.tls.caFile = certificates.caCert }
        let r = try await client.send(try PocketRequest("https+unix://\(Self.encoded(path))/host"))
        XCTAssertEqual(r.text, "tls localhost")
        XCTAssertGreaterThan(r.timings.tls, .zero)
        var named = try PocketRequest("https://localhost/host")
        named.unixSocketPath = path
        let byName = try await client.send(named)
        XCTAssertEqual(byName.text, "tls localhost")
        // The certificate is for localhost: another URL name fails verification.
        var wrong = try PocketRequest("https://elsewhere.test/host")
        wrong.unixSocketPath = path
        await assertPocketError(.tlsHostnameMismatch) { try await client.send(wrong) }
        XCTAssertEqual(server.tlsHandshakeDetails.first?.serverName, "localhost")
    }

    func testNginxOverItsUnixSocket() async throws {
        let nginx = try requireNginx()
        let client = try makeClient()
        let base = "http+unix://\(Self.encoded(nginx.socketPath))"
        let small = try await client.send(try PocketRequest(base + "/small"))
        XCTAssertEqual(Array(small.body), NginxFixture.smallBody)
        let host = try await client.send(try PocketRequest(base + "/host"))
        XCTAssertEqual(host.text, "localhost unix:\(nginx.socketPath)")
        XCTAssertTrue(host.timings.reusedConnection)
        let large = try await client.send(try PocketRequest(base + "/large"))
        XCTAssertTrue(Array(large.body) == NginxFixture.largeBody)
        var viaOption = try PocketRequest(nginx.url("/host"))
        viaOption.unixSocketPath = nginx.socketPath
        let r = try await client.send(viaOption)
        XCTAssertEqual(r.text, "127.0.0.1:\(nginx.port) unix:\(nginx.socketPath)", "nginx's URL, its Unix socket")
        let tcp = try await client.send(try PocketRequest(nginx.url("/host")))
        XCTAssertEqual(tcp.text, "127.0.0.1:\(nginx.port) 127.0.0.1", "the same URL without the option goes over TCP")
    }

    func testCurlCommandUsesUnixSocketAndReachesTheSameSocket() async throws {
        let (server, path) = try unixServer("curl")
        let client = try makeClient()
        let request = try PocketRequest("http+unix://\(Self.encoded(path))/host?x=1")
        let command = request.curlCommand()
        XCTAssertEqual(command, "curl --unix-socket '\(path)' 'http://localhost/host?x=1'")
        _ = try await client.send(request)
        let (output, _) = try ChildProcess.run("/bin/sh", ["-c", command + " -s -o /dev/null"])
        XCTAssertEqual(output.status, 0)
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertEqual(server.receivedRequests.map(\.target), ["/host?x=1", "/host?x=1"])
        XCTAssertEqual(server.receivedRequests.map { $0.header("Host") }, ["localhost", "localhost"])
    }
}
