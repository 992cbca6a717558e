import Foundation
import XCTest

/// What the shipped executables link: no test module, and for
/// `pocket`, no full Foundation (it imports FoundationEssentials only, so it
/// never loads FoundationInternationalization and ICU at start).
final class LinkMapTests: XCTestCase {
    /// Names that belong to the project's test code or to XCTest: module
    /// names (they are in every mangled Swift symbol of the module), the C
    /// test TLS glue's symbol prefix, and XCTest's libraries.
    static let testMarkers = ["PocketTestSupport", "CPocketTestTLS", "pktt_", "XCTest"]

    func testShippedExecutablesLinkNoTestModule() throws {
        for name in ["pocket", "pocket-bench"] {
            let binary = try PocketBinary.path(name)
            let libraries = try Self.sharedLibraries(of: binary)
            XCTAssertFalse(libraries.isEmpty, "ldd listed nothing for \(binary.path)")
            for library in libraries {
                XCTAssertFalse(Self.testMarkers.contains { library.contains($0) }, "\(name) links \(library)")
            }
            let found = try Self.markers(in: binary)
            XCTAssertEqual(found, [], "\(name)'s symbols and strings name test code: \(found)")
        }
    }

    /// The scan above finds test code where it is: the test bundle itself.
    func testTheScanFindsTestCodeInTheTestBundle() throws {
        let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        XCTAssertTrue(try Self.markers(in: bundle).contains("PocketTestSupport"), bundle.path)
    }

    func testPocketLoadsNoFullFoundation() throws {
        let libraries = try Self.sharedLibraries(of: try PocketBinary.path("pocket"))
        XCTAssertTrue(libraries.contains { $0.hasPrefix("libFoundationEssentials") }, "\(libraries)")
        for heavy in ["libFoundation.so", "libFoundationInternationalization", "lib_FoundationICU", "libFoundationNetworking"] {
            XCTAssertFalse(libraries.contains { $0.hasPrefix(heavy) }, "pocket loads \(heavy): \(libraries)")
        }
    }

    // MARK: Helpers

    /// The file names of the shared libraries `ldd` resolves for `binary`
    /// (the whole dependency tree, as the dynamic loader would load it).
    static func sharedLibraries(of binary: URL) throws -> [String] {
        let run = try PocketBinary.run([binary.path], binary: "/usr/bin/ldd")
        XCTAssertEqual(run.status, 0, run.stderrText)
        return run.stdoutText.split(separator: "\n").compactMap { line in
            line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init)
        }
    }

    /// The test markers found in `binary`'s bytes: its symbol tables
    /// (static and dynamic), its strings and its debug information.
    static func markers(in binary: URL) throws -> [String] {
        let bytes = try Data(contentsOf: binary, options: .alwaysMapped)
        return testMarkers.filter { bytes.range(of: Data($0.utf8)) != nil }
    }
}
