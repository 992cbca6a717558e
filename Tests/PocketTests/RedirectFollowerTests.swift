import Foundation
import XCTest
@testable import Pocket

/// The redirect follower (RedirectFollower.swift) as a pure value: each 3xx
/// head turned into the next request, with no socket; then the follower
/// inside the request path, through a fake hop.
final class RedirectFollowerTests: XCTestCase {
    private func follower(_ request: PocketRequest, policy: PocketRedirectPolicy = .follow) -> RedirectFollower {
        RedirectFollower(policy: policy, request: request, clientTimeouts: PocketTimeouts())
    }

    private func head(_ status: Int, to location: String) -> PocketResponseHead {
        PocketResponseHead(status: status, reason: "", headers: ["Location": location])
    }

    private func post(_ url: String) -> PocketRequest {
        PocketRequest(method: .post, url: URL(string: url)!, headers: ["Content-Type": "text/plain", "Authorization": "Bearer t"],
                      body: .text("form"))
    }

    func testA301Or302AfterPostBecomesAGetWithoutItsBody() async throws {
        for status in [301, 302] {
            var f = follower(post("http://a.test/form"))
            let next = try await f.next(after: head(status, to: "/done"), took: .zero)
            XCTAssertEqual(next?.method, .get, "\(status)")
            XCTAssertNil(next?.body, "\(status)")
            XCTAssertNil(next?.headers["Content-Type"], "\(status)")
            XCTAssertEqual(next?.url.absoluteString, "http://a.test/done")
        }
    }

    func testA301Or302KeepsAPutAndItsBody() async throws {
        for status in [301, 302] {
            var request = post("http://a.test/item")
            request.method = .put
            var f = follower(request)
            let next = try await f.next(after: head(status, to: "/moved"), took: .zero)
            XCTAssertEqual(next?.method, .put, "\(status)")
            XCTAssertEqual(next?.body, .text("form"), "\(status)")
        }
    }

    func testA303MakesEveryMethodButHeadAGet() async throws {
        var put = post("http://a.test/item")
        put.method = .put
        var f = follower(put)
        let next = try await f.next(after: head(303, to: "/see"), took: .zero)
        XCTAssertEqual(next?.method, .get)
        XCTAssertNil(next?.body)

        var h = follower(PocketRequest(method: .head, url: URL(string: "http://a.test/x")!))
        let headNext = try await h.next(after: head(303, to: "/see"), took: .zero)
        XCTAssertEqual(headNext?.method, .head)
    }

    func testA307Or308KeepsTheMethodAndBody() async throws {
        for status in [307, 308] {
            var f = follower(post("http://a.test/form"))
            let next = try await f.next(after: head(status, to: "/again"), took: .zero)
            XCTAssertEqual(next?.method, .post, "\(status)")
            XCTAssertEqual(next?.body, .text("form"), "\(status)")
        }
    }

    func testCredentialsAndCookiesStayOnTheirOrigin() async throws {
        var request = PocketRequest(url: URL(string: "http://a.test/x")!)
        request.headers["Authorization"] = "Bearer t"
        request.headers["Proxy-Authorization"] = "Basic p"
        request.headers["Cookie"] = "id=1"
        request.headers["Accept"] = "text/plain"
        var same = follower(request)
        let kept = try await same.next(after: head(302, to: "http://A.test:80/y"), took: .zero)
        XCTAssertEqual(kept?.headers["Authorization"], "Bearer t")
        XCTAssertEqual(kept?.headers["Cookie"], "id=1")

        var cross = follower(request)
        let stripped = try await cross.next(after: head(302, to: "http://b.test/y"), took: .zero)
        XCTAssertNil(stripped?.headers["Authorization"])
        XCTAssertNil(stripped?.headers["Proxy-Authorization"])
        XCTAssertNil(stripped?.headers["Cookie"])
        XCTAssertEqual(stripped?.headers["Accept"], "text/plain")
    }

    func testALoopIsRefused() async throws {
        var f = follower(PocketRequest(url: URL(string: "http://a.test/1")!))
        _ = try await f.next(after: head(302, to: "/2"), took: .zero)
        do {
            _ = try await f.next(after: head(302, to: "/1"), took: .zero)
            XCTFail("expected redirectLoop")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .redirectLoop)
        }
    }

    func testTheHopLimitIsEnforced() async throws {
        var f = follower(PocketRequest(url: URL(string: "http://a.test/0")!), policy: PocketRedirectPolicy(maxHops: 2))
        _ = try await f.next(after: head(302, to: "/1"), took: .zero)
        _ = try await f.next(after: head(302, to: "/2"), took: .zero)
        do {
            _ = try await f.next(after: head(302, to: "/3"), took: .zero)
            XCTFail("expected tooManyRedirects")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .tooManyRedirects)
        }
        XCTAssertEqual(f.hops.count, 2)
    }

    func testAHeadThatIsNotARedirectEndsTheChain() async throws {
        var f = follower(PocketRequest(url: URL(string: "http://a.test/0")!))
        let next = try await f.next(after: PocketResponseHead(status: 200, reason: "", headers: ["Location": "/x"]), took: .zero)
        XCTAssertNil(next)
    }

    func testThePathFollowsTheChainForEveryDelivery() async throws {
        let hop = FakeHop { request, _ in
            request.url.path == "/end" ? answer(200, body: "there") : answer(301, ["Location": "/end"])
        }
        let client = try hop.client()
        defer { Task { try? await client.shutdown() } }
        let request = PocketRequest(url: URL(string: "http://a.test/start")!)
        let collected = try await client.send(request)
        XCTAssertEqual(collected.text, "there")
        XCTAssertEqual(collected.url?.path, "/end")
        XCTAssertEqual(collected.redirects.map(\.status), [301])
        let streamed = try await client.stream(request)
        XCTAssertEqual(streamed.redirects.map(\.status), [301])
        let streamedBody = try await streamed.body.collect(upTo: 100)
        XCTAssertEqual(streamedBody, Data("there".utf8))
        XCTAssertEqual(hop.requests.map(\.url.path), ["/start", "/end", "/start", "/end"])
    }
}
