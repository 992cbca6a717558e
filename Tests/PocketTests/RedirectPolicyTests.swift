import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The policy's limits and hook, bodies that cannot be replayed, and
/// redirects on the stream and download paths.
final class RedirectPolicyTests: XCTestCase {
    func testALoopIsItsOwnError() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.routeRedirect("/a", 302, to: "/b")
        server.routeRedirect("/b", 302, to: "/a")
        server.routeRedirect("/self", 307, to: "/self")
        let client = try makeClient()
        let error = await assertPocketError(.redirectLoop) { try await client.send(PocketRequest(url: url(server, "/a"))) }
        XCTAssertEqual(server.requestCount, 2, "stopped before sending /a again")
        XCTAssertTrue(error?.message.contains("/a → ") == true, error?.message ?? "")
        await assertPocketError(.redirectLoop) { try await client.send(PocketRequest(url: url(server, "/self"))) }
        // POST /p 303 → GET /p is not a loop: the method differs.
        server.route("/p") { r in r.method == "POST" ? .response(status: 303, headers: [("Location", "/p")]) : .text("got") }
        let response = try await client.send(PocketRequest(method: .post, url: url(server, "/p"), body: .text("x")))
        XCTAssertEqual(response.text, "got")
    }

    func testTooManyHopsIsItsOwnError() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.defaultHandler = { r in
            let n = Int(r.path.dropFirst(6)) ?? 0 // /hops/N
            return .response(status: 302, headers: [("Location", "/hops/\(n + 1)")])
        }
        let client = try makeClient()
        let error = await assertPocketError(.tooManyRedirects) { try await client.send(PocketRequest(url: url(server, "/hops/0"))) }
        XCTAssertEqual(server.requestCount, 11, "the first request and the default 10 hops")
        XCTAssertEqual(error?.response?.status, 302)
        server.resetStatistics()
        var request = PocketRequest(url: url(server, "/hops/0"))
        request.redirects = PocketRedirectPolicy(maxHops: 3)
        await assertPocketError(.tooManyRedirects) { try await client.send(request) }
        XCTAssertEqual(server.requestCount, 4)
        // Exactly at the limit is fine.
        server.route("/hops/3") { _ in .text("done") }
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "done")
        XCTAssertEqual(response.redirects.map(\.to.path), ["/hops/1", "/hops/2", "/hops/3"])
    }

    func testTheHookCanFollowModifyOrStop() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.routeRedirect("/one", 301, to: "/two")
        server.routeRedirect("/two", 302, to: "/three")
        server.route("/three") { r in .text("three \(r.header("X-Again") ?? "-")") }
        server.route("/four") { _ in .text("four") }
        let client = try makeClient()
        let seen = Recorder<String>()

        var request = PocketRequest(url: url(server, "/one"))
        request.redirects = PocketRedirectPolicy { redirect in
            seen.append("\(redirect.hop) \(redirect.response.status) \(redirect.from.path) → \(redirect.request.url.path)")
            return .follow
        }
        var response = try await client.send(request)
        XCTAssertEqual(response.text, "three -")
        XCTAssertEqual(seen.values, ["1 301 /one → /two", "2 302 /two → /three"])

        request.redirects = PocketRedirectPolicy { redirect in
            var next = redirect.request
            next.headers["X-Again"] = "yes"
            if next.url.path == "/three" { next.url = url(server, "/four") }
            return redirect.hop == 1 ? .modify(next) : .follow
        }
        response = try await client.send(request)
        XCTAssertEqual(response.text, "three yes", "the modified request went, and later hops start from it")

        request.redirects = PocketRedirectPolicy { redirect in redirect.hop == 2 ? .stop : .follow }
        response = try await client.send(request)
        XCTAssertEqual(response.status, 302, "stopped: the 3xx is the response")
        XCTAssertEqual(response.url, url(server, "/two"))
        XCTAssertEqual(response.redirects.count, 1)

        struct Refused: Error {}
        request.redirects = PocketRedirectPolicy { _ in throw Refused() }
        do {
            _ = try await client.send(request)
            XCTFail("the hook's error should fail the request")
        } catch is Refused {}

        // The hook cannot talk its way past the checks.
        request.redirects = PocketRedirectPolicy(maxHops: 5) { redirect in
            var next = redirect.request
            next.url = url(server, "/one")
            return .modify(next)
        }
        await assertPocketError(.redirectLoop) { try await client.send(request) }
    }

    func testAOneShotStreamBodyIsNotSentTwice() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/in") { r in .text("\(r.method) \(r.bodyText)") }
        server.routeRedirect("/307", 307, to: "/in")
        server.routeRedirect("/303", 303, to: "/in")
        let client = try makeClient()
        let chunks = AsyncStream<Data> { c in
            c.yield(Data("stream".utf8))
            c.finish()
        }
        var request = PocketRequest(method: .post, url: url(server, "/307"), body: .stream(chunks, length: nil))
        let error = await assertPocketError(.bodyNotReplayable) { try await client.send(request) }
        XCTAssertEqual(error?.response?.status, 307)
        XCTAssertEqual(server.receivedRequests.map(\.path), ["/307"])
        XCTAssertEqual(server.receivedRequests.first?.bodyText, "stream", "the first hop did send it")

        let again = AsyncStream<Data> { c in
            c.yield(Data("stream".utf8))
            c.finish()
        }
        request = PocketRequest(method: .post, url: url(server, "/303"), body: .stream(again, length: nil))
        let response = try await client.send(request)
        XCTAssertEqual(response.text, "GET ", "a 303 drops the body, so a stream is no obstacle")

        // A file body is replayable: the 307 sends it again.
        let file = FileManager.default.temporaryDirectory.appending(path: "pocket-redirect-\(UUID().uuidString)")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let replayed = try await client.send(PocketRequest(method: .put, url: url(server, "/307"), body: .file(file)))
        XCTAssertEqual(replayed.text, "PUT from a file")
    }

    func testStreamAndDownloadFollowRedirectsToo() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 300_000, seed: 7)
        server.routeResource("/file", resource)
        server.route("/moved") { _ in
            .response(status: 301, headers: [("Location", "/file")], body: Array(repeating: UInt8(ascii: "m"), count: 1000))
        }
        let client = try makeClient()
        let (streamUpdates, streamProgress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let streamed = try await client.stream(PocketRequest(url: url(server, "/moved")), progress: streamProgress)
        XCTAssertEqual(streamed.status, 200)
        XCTAssertEqual(streamed.url, url(server, "/file"))
        XCTAssertEqual(streamed.redirects.map(\.status), [301])
        let data = try await streamed.body.collect(upTo: 1 << 20)
        XCTAssertEqual(SHA256Digest.hex(Array(data)), resource.sha256)
        var streamReports: [PocketTransferProgress] = []
        for await p in streamUpdates { streamReports.append(p) }
        XCTAssertEqual(streamReports.last { $0.direction == .download }?.bytes, 300_000,
                       "the updates lasted until the final body was read, not just its head")
        XCTAssertEqual(server.acceptedConnections, 1, "the small 3xx body was read, so its connection was reused")

        let destination = FileManager.default.temporaryDirectory.appending(path: "pocket-redirect-dl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination) }
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        async let downloaded = client.download(PocketRequest(url: url(server, "/moved")), to: destination, progress: progress)
        var reports: [PocketTransferProgress] = []
        for await p in updates { reports.append(p) } // ends once, after the whole chain
        let download = try await downloaded
        XCTAssertEqual(download.status, 200)
        XCTAssertEqual(download.url, url(server, "/file"))
        XCTAssertEqual(download.redirects.count, 1)
        let saved = try Data(contentsOf: destination)
        XCTAssertEqual(SHA256Digest.hex(Array(saved)), resource.sha256, "the file holds the final body only")
        let last = try XCTUnwrap(reports.last { $0.direction == .download })
        XCTAssertEqual(last.bytes, 300_000, "the progress stream lasted to the final hop")
    }

    func testATemplateCarriesAPolicy() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.routeRedirect("/api/old", 308, to: "/api/new")
        server.route("/api/new") { _ in .text("new") }
        let client = try makeClient { $0.baseURL = URL(string: server.url("/api"))! }
        var manual = PocketRequestTemplate()
        manual.redirects = .disabled
        client.register(manual, as: "manual")
        let request = try client.request(.get, "old", template: "manual")
        let archived = try JSONDecoder().decode(PocketRequest.self, from: JSONEncoder().encode(request))
        var response = try await client.send(archived)
        XCTAssertEqual(response.status, 308, "the template's policy went with the (archived) request")
        response = try await client.send(try client.request(.get, "old"))
        XCTAssertEqual(response.text, "new", "without the template, the client's default follows")
        XCTAssertEqual(response.request?.url, url(server, "/api/old"), "response.request is the request as given")
        XCTAssertEqual(response.url, url(server, "/api/new"))
    }

    func testATotalDeadlineCoversTheWholeChain() async throws {
        var request = PocketRequest(url: URL(string: "http://127.0.0.1:1/a")!)
        request.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(5), total: .seconds(1))
        let head = PocketResponseHead(status: 302, reason: "Found", headers: ["Location": "/b"])
        var follower = RedirectFollower(policy: .follow, request: request, clientTimeouts: PocketTimeouts())
        let next = try await follower.next(after: head, took: .milliseconds(300))
        XCTAssertEqual(next?.timeouts?.total, .milliseconds(700), "the next hop gets what is left")
        XCTAssertEqual(next?.timeouts?.read, .seconds(5))
        let error = await assertPocketError(.totalTimeout) {
            try await follower.next(after: PocketResponseHead(status: 307, reason: "", headers: ["Location": "/c"]), took: .milliseconds(800))
        }
        XCTAssertEqual(error?.response?.status, 307)

        // Without a total deadline nothing is added.
        var open = RedirectFollower(policy: .follow, request: PocketRequest(url: request.url), clientTimeouts: PocketTimeouts())
        let free = try await open.next(after: head, took: .seconds(100))
        XCTAssertNil(free?.timeouts)
    }

    func testThePolicyIsArchivedWithTheRequestButNotItsHook() throws {
        var request = PocketRequest(url: URL(string: "http://127.0.0.1/x")!)
        request.redirects = PocketRedirectPolicy(maxHops: 4, allowsInsecureDowngrade: true) { _ in .stop }
        let data = try JSONEncoder().encode(request)
        let decoded = try JSONDecoder().decode(PocketRequest.self, from: data)
        XCTAssertEqual(decoded.redirects?.maxHops, 4)
        XCTAssertEqual(decoded.redirects?.allowsInsecureDowngrade, true)
        XCTAssertNil(decoded.redirects?.onRedirect)
        XCTAssertNotEqual(decoded, request, "a policy with a hook differs from one without")
        request.redirects?.onRedirect = nil
        XCTAssertEqual(decoded, request)
        XCTAssertEqual(try JSONDecoder().decode(PocketRequest.self, from: JSONEncoder().encode(PocketRequest(url: request.url))).redirects, nil)
    }
}

/// Values appended from any thread, read by the test.
final class Recorder<T: Sendable>: Sendable {
    private let lock = Lock<[T]>([])
    func append(_ value: T) { lock.withLock { $0.append(value) } }
    var values: [T] { lock.withLock { $0 } }
}
