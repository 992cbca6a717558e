import Foundation
import XCTest
@testable import Pocket

/// A service file imports Foundation, Pocket and its web framework together:
/// no public top-level type of Pocket may share a name with one of theirs
/// (the frameworks' names are test data, FrameworkTypeNames.swift, generated
/// from their sources by scripts/gen-framework-names.py), and every one
/// follows the one naming scheme: the `Pocket` prefix.
final class NameClashTests: XCTestCase {
    /// Public top-level type names declared in the shipped library targets'
    /// sources (declarations at column 0, as the package writes them).
    static func pocketTypeNames() throws -> [String: String] {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let pattern = try NSRegularExpression(pattern:
            #"^(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:public|open)\s+(?:(?:final|indirect)\s+)*(?:struct|class|enum|protocol|typealias|actor)\s+([A-Za-z_][A-Za-z0-9_]*)"#,
            options: [.anchorsMatchLines])
        var names: [String: String] = [:]
        for target in ["Pocket", "PocketTesting", "PocketHTTPTypes", "PocketOpenAPI", "PocketMetrics", "PocketTracing",
                       "PocketServiceLifecycle", "PocketNIO"] {
            let folder = root.appending(path: "Sources/\(target)")
            guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let name = String(text[Range(match.range(at: 1), in: text)!])
                    names[name] = "\(target)/\(file.lastPathComponent)"
                }
            }
        }
        return names
    }

    func testNoPublicTypeSharesANameWithTheFrameworksAServiceImports() throws {
        let names = try Self.pocketTypeNames()
        XCTAssertNotNil(names["PocketClient"], "the source scan finds the library's types")
        XCTAssertNotNil(names["PocketRequest"])
        XCTAssertGreaterThan(names.count, 50)
        XCTAssertEqual(frameworkTypeNames.keys.sorted(),
                       ["FluentKit", "Foundation", "HTTPTypes", "Hummingbird", "NIOCore", "NIOHTTP1", "NIOSSL", "Vapor"])
        XCTAssertTrue(frameworkTypeNames["Foundation"]!.contains("Pipe"), "the test data holds the names that clashed before")
        XCTAssertTrue(frameworkTypeNames["Vapor"]!.contains("Request"))
        XCTAssertTrue(frameworkTypeNames["NIOHTTP1"]!.contains("HTTPHeaders"))
        for (name, file) in names.sorted(by: { $0.key < $1.key }) {
            for (module, theirs) in frameworkTypeNames where theirs.contains(name) {
                XCTFail("\(name) (\(file)) clashes with \(module).\(name)")
            }
        }
    }

    func testEveryPublicTopLevelTypeCarriesThePocketPrefix() throws {
        for (name, file) in try Self.pocketTypeNames().sorted(by: { $0.key < $1.key }) {
            XCTAssertTrue(name.hasPrefix("Pocket"), "\(name) (\(file)) does not follow the naming scheme")
        }
    }
}
