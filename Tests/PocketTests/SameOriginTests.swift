import Foundation
import XCTest
@testable import Pocket

/// The one same-origin rule (SameOrigin.swift), which the redirect
/// follower, authentication and the cache all use.
final class SameOriginTests: XCTestCase {
    private func same(_ a: String, _ b: String) -> Bool { PocketClient.sameOrigin(URL(string: a)!, URL(string: b)!) }

    func testSchemeHostAndPortMakeTheOrigin() {
        XCTAssertTrue(same("http://a.test/x", "http://A.TEST:80/y?q"))
        XCTAssertTrue(same("https://a.test/", "https://a.test:443/z"))
        XCTAssertFalse(same("http://a.test/", "https://a.test/"))
        XCTAssertFalse(same("http://a.test/", "http://a.test:8080/"))
        XCTAssertFalse(same("http://a.test/", "http://b.test/"))
    }

    func testEachUnixSocketIsItsOwnOrigin() {
        XCTAssertTrue(same("http+unix://%2Ftmp%2Fa.sock/x", "http+unix://%2Ftmp%2Fa.sock/y"))
        XCTAssertFalse(same("http+unix://%2Ftmp%2Fa.sock/x", "http+unix://%2Ftmp%2Fb.sock/x"))
        XCTAssertFalse(same("http+unix://%2Ftmp%2Fa.sock/x", "http://localhost/x"))
    }

    func testAURLPocketCannotSendToHasNoOrigin() {
        XCTAssertFalse(same("ftp://a.test/x", "ftp://a.test/x"))
        XCTAssertFalse(same("http://a.test/x", "ftp://a.test/x"))
    }
}
