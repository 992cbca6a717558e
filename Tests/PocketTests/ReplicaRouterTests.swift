import Foundation
import XCTest
@testable import Pocket

/// The replica router's lookup of a set by the request's host, and a set's
/// readiness for a hop, without sockets.
final class ReplicaRouterTests: XCTestCase {
    private func router(_ names: [String]) throws -> ReplicaRouter {
        var configuration = PocketClient.Configuration()
        configuration.replicaSets = names.map { PocketReplicaSet(name: $0, endpoints: [PocketReplicaEndpoint(host: "10.0.0.1", port: 80)]) }
        return try XCTUnwrap(ReplicaRouter(configuration))
    }

    private func target(_ host: String) throws -> Target {
        Target(try XCTUnwrap(URL(string: "http://\(host):8080/x")))
    }

    func testAHostNamesItsSetWhateverTheCaseOfItsASCIILetters() throws {
        let router = try router(["svc", "Users-East.internal"])
        for host in ["svc", "SVC", "sVc"] {
            XCTAssertEqual(router.set(for: try target(host))?.name, "svc", host)
            XCTAssertTrue(router.namesSet(try target(host)), host)
        }
        XCTAssertEqual(router.set(for: try target("USERS-east.Internal"))?.name, "users-east.internal")
        for host in ["sv", "svcx", "svd", "users-east", "10.0.0.1"] {
            XCTAssertNil(router.set(for: try target(host)), host)
            XCTAssertFalse(router.namesSet(try target(host)), host)
        }
    }

    func testManySetsAreLookedUpByTheirLowerCaseName() throws {
        let names = (0..<12).map { "svc\($0)" }
        let router = try router(names)
        XCTAssertEqual(router.set(for: try target("SVC11"))?.name, "svc11")
        XCTAssertNil(router.set(for: try target("svc12")))
    }

    func testTheASCIIComparisonFoldsOnlyLettersAndLeavesOtherHostsToUnicode() {
        XCTAssertEqual(ReplicaRouter.asciiFoldedEqual("A-Z.0", "a-z.0"), true)
        XCTAssertEqual(ReplicaRouter.asciiFoldedEqual("a-z.0", "a-z.0"), true)
        // '@' (0x40) and '[' (0x5B) are beside the letters: not folded.
        XCTAssertEqual(ReplicaRouter.asciiFoldedEqual("@", "`"), false)
        XCTAssertEqual(ReplicaRouter.asciiFoldedEqual("[", "{"), false)
        XCTAssertEqual(ReplicaRouter.asciiFoldedEqual("svc", "svcx"), false)
        XCTAssertEqual(ReplicaRouter.asciiFoldedEqual("svcx", "svc"), false)
        XCTAssertNil(ReplicaRouter.asciiFoldedEqual("SVC-\u{00C9}", "svc-\u{00E9}"))
        XCTAssertNil(ReplicaRouter.asciiFoldedEqual("x\u{00C9}", "svc"), "a non-ASCII byte after a mismatch still leaves the host to Unicode")
    }

    func testASetIsReadyForAHopOnceItHasAListOrItsDiscoveryFailed() {
        let listed = PocketReplicaSet(name: "a", balancing: .roundRobin, ejection: nil)
        XCTAssertFalse(listed.isReady)
        listed.update([PocketReplicaEndpoint(host: "10.0.0.1", port: 80)])
        XCTAssertTrue(listed.isReady)
        let empty = PocketReplicaSet(name: "b", balancing: .roundRobin, ejection: nil)
        empty.update([])
        XCTAssertTrue(empty.isReady, "an empty list fails the hop with .noReplicas at once")
        let failed = PocketReplicaSet(name: "c", balancing: .roundRobin, ejection: nil)
        failed.discoveryFailed("no answer")
        XCTAssertTrue(failed.isReady)
    }
}
