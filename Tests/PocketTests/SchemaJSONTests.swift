import Foundation
import XCTest
@testable import Pocket

/// The JSON parser and writer under the schema layer.
final class SchemaJSONTests: XCTestCase {
    func testParsesEveryType() throws {
        let value = try PocketJSONValue(parsing: #" {"s": "a\"b\\c\/d\n\t\u00e9\ud83d\ude00", "i": -42, "big": 12345678901234567890, "d": 1.5e3, "z": -0.0, "t": true, "f": false, "n": null, "a": [], "o": {}} "#)
        XCTAssertEqual(value["s"].string, "a\"b\\c/d\n\té😀")
        XCTAssertEqual(value["i"], .int(-42))
        XCTAssertEqual(value["big"].double, 12345678901234567168, "past Int64: the nearest Double")
        XCTAssertEqual(value["d"], .int(1500))
        XCTAssertEqual(value["d"].double, 1500)
        XCTAssertEqual(value["z"].double, 0)
        XCTAssertEqual(value["t"], true)
        XCTAssertEqual(value["f"], false)
        XCTAssertTrue(value["n"].isNull)
        XCTAssertEqual(value["a"], [])
        XCTAssertEqual(value["o"], [:])
        XCTAssertEqual(value.object?.keys, ["s", "i", "big", "d", "z", "t", "f", "n", "a", "o"], "keys keep their order")
        XCTAssertEqual(try PocketJSONValue(parsing: "9223372036854775807"), .int(Int.max))
        XCTAssertEqual(try PocketJSONValue(parsing: "-9223372036854775808"), .int(Int.min))
        XCTAssertEqual(try PocketJSONValue(parsing: "0.1").double, 0.1)
        XCTAssertEqual(try PocketJSONValue(parsing: "\"\""), "")
    }

    func testRejectsWhatRFC8259Rejects() {
        let bad = ["", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "1e", "0x10", "NaN", "Infinity",
                   "'a'", "\"a", "\"\\x\"", "\"\\u12G4\"", "\"\\ud800\"", "\"\\udc00x\"", "\"a\nb\"", "tru", "nul",
                   "[1 2]", "{\"a\" 1}", "{1: 2}", "1 2", "/* c */ 1", "[1e999]", "\"\u{7}\""]
        for text in bad {
            XCTAssertThrowsError(try PocketJSONValue(parsing: text), text) { error in
                XCTAssertEqual((error as? PocketError)?.code, .malformedJSON, "\(text): \(error)")
            }
        }
        // Invalid UTF-8 in a string.
        XCTAssertThrowsError(try PocketJSONValue(parsing: Data([0x22, 0xC3, 0x28, 0x22]))) { error in
            XCTAssertEqual((error as? PocketError)?.message, "Invalid JSON at line 1, column 2: a string is not valid UTF-8")
        }
    }

    /// A key twice is rejected: a validator must never check one value
    /// while a mapper reads the other.
    func testDuplicateKeysAreRejected() throws {
        XCTAssertThrowsError(try PocketJSONValue(parsing: #"{"a": 1, "b": 2, "a": "x"}"#)) { error in
            XCTAssertEqual((error as? PocketError)?.message, "Invalid JSON at line 1, column 18: duplicate key 'a' in a dictionary")
        }
        let wide = "{" + (0..<40).map { #""k\#($0)": \#($0)"# }.joined(separator: ",") + #", "k3": 0}"#
        XCTAssertThrowsError(try PocketJSONValue(parsing: wide)) { error in
            XCTAssertTrue("\(error)".contains("duplicate key 'k3'"), "\(error)")
        }
        XCTAssertEqual(PocketJSONObject([("a", 1), ("b", 2), ("a", 3)]).members.map(\.key), ["a", "b"])
        XCTAssertEqual(PocketJSONObject([("a", 1), ("b", 2), ("a", 3)])["a"], 3)
        var many = PocketJSONObject()
        for i in 0..<100 { many["k\(i)"] = .int(i) }
        many["k50"] = "replaced"
        many["k3"] = nil
        XCTAssertEqual(many.count, 99)
        XCTAssertEqual(many["k50"], "replaced")
        XCTAssertNil(many["k3"])
        XCTAssertEqual(many["k99"], 99)
    }

    func testWriterRoundTrips() throws {
        var rng = SplitMix(state: 3)
        func random(_ depth: Int) -> PocketJSONValue {
            switch rng.next() % (depth > 3 ? 5 : 7) {
            case 0: return .null
            case 1: return .bool(rng.next() % 2 == 0)
            case 2: return .int(Int(truncatingIfNeeded: rng.next()) >> Int(rng.next() % 64))
            case 3: return .double(Double(Int64(truncatingIfNeeded: rng.next()) >> 20) / 1024.5)
            case 4:
                let scalars = (0..<Int(rng.next() % 8)).map { _ in
                    ["a", "\"", "\\", "\n", "\u{1}", "é", "😀", "/", "\u{7F}"][Int(rng.next() % 9)]
                }
                return .string(scalars.joined())
            case 5: return .array((0..<Int(rng.next() % 5)).map { _ in random(depth + 1) })
            default:
                return .object(PocketJSONObject((0..<Int(rng.next() % 5)).map { i in ("k\(i)\u{0}\"", random(depth + 1)) }))
            }
        }
        for _ in 0..<500 {
            let value = random(0)
            XCTAssertEqual(try PocketJSONValue(parsing: value.jsonData()), value, value.description)
            XCTAssertEqual(try PocketJSONValue(parsing: value.prettyPrinted), value)
        }
    }

    func testWriterRefusesWhatJSONCannotHold() {
        XCTAssertThrowsError(try PocketJSONValue.double(.infinity).jsonData()) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaMappingFailed)
        }
        XCTAssertThrowsError(try (["d": .mapped(Date())] as PocketJSONValue).jsonData()) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaMappingFailed)
            XCTAssertTrue("\(error)".contains("a Date value has no JSON form"), "\(error)")
        }
    }

    func testLeadingByteOrderMarkIsSkipped() throws {
        XCTAssertEqual(try PocketJSONValue(parsing: Data([0xEF, 0xBB, 0xBF] + Array("[1]".utf8))), [1])
    }

    func testCodableThroughJSONValue() throws {
        struct Inner: Codable, Equatable { var x: [Int?]; var u: URL; var u8: UInt8; var f: Float }
        struct Outer: Codable, Equatable { var name: String; var inner: Inner; var map: [String: Bool]; var opt: String? }
        let model = Outer(name: "n", inner: Inner(x: [1, nil, 3], u: URL(string: "http://h/p")!, u8: 255, f: 1.5),
                          map: ["a": true], opt: nil)
        let json = try PocketJSONValue(encoding: model)
        XCTAssertEqual(json, ["name": "n", "inner": ["x": [1, nil, 3], "u": "http://h/p", "u8": 255, "f": 1.5], "map": ["a": true]])
        XCTAssertEqual(try json.decode(Outer.self), model)
        XCTAssertThrowsError(try (["name": 1] as PocketJSONValue).decode(Outer.self)) { error in
            guard case DecodingError.typeMismatch = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try (["u8": 256] as PocketJSONValue).decode([String: UInt8].self))
    }

    /// The deepest document the parser accepts, mapped recursively inside a
    /// task (whose stack is smaller than the main thread's), does not
    /// exhaust the stack; one level deeper is `.jsonNestingTooDeep`.
    func testDeepestDocumentMapsInsideATask() async throws {
        struct Chain: PocketObjectMapper {
            var schema: PocketSchema { try! PocketSchema(json: #"{"next{?}": "{chain}"}"#) }
            func model(from json: PocketJSONValue) throws -> Int? { (json["next"].mapped(as: Int.self) ?? 0) + 1 }
        }
        var registry = PocketSchemaRegistry()
        registry.register(Chain(), for: "{chain}")
        func document(_ depth: Int) -> Data {
            Data((String(repeating: #"{"next": "#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)).utf8)
        }
        let registryCopy = registry
        let depth = try await Task.detached {
            try registryCopy.decode(document(PocketJSONParser.defaultMaxDepth), schema: PocketSchema(tag: "{chain}")).mapped(as: Int.self)
        }.value
        XCTAssertEqual(depth, PocketJSONParser.defaultMaxDepth)
        XCTAssertThrowsError(try registry.decode(document(PocketJSONParser.defaultMaxDepth + 1), schema: PocketSchema(tag: "{chain}"))) { error in
            XCTAssertEqual((error as? PocketError)?.code, .jsonNestingTooDeep)
        }
        // A tree built in code is held to the same bound when validated or written.
        var tree: PocketJSONValue = [:]
        for _ in 0..<(PocketJSONParser.defaultMaxDepth + 10) { tree = ["next": tree] }
        let deepTree = tree
        let encodeError = await Task.detached { () -> PocketError? in
            do { _ = try registryCopy.encode(deepTree, schema: PocketSchema(tag: "{chain}")); return nil } catch { return error as? PocketError }
        }.value
        XCTAssertEqual(encodeError?.code, .jsonNestingTooDeep)
        XCTAssertTrue(encodeError?.message.hasPrefix("JSON nests deeper than 128 arrays and dictionaries at root.next.next") ?? false,
                      encodeError?.message ?? "")
        XCTAssertThrowsError(try deepTree.jsonData()) { error in
            XCTAssertEqual((error as? PocketError)?.code, .jsonNestingTooDeep)
        }
        XCTAssertTrue(deepTree.description.contains("…"))
    }

    /// A mapper whose schema uses its own tag maps a tree of any depth.
    func testRecursiveMapper() throws {
        final class Node: Sendable {
            let name: String
            let children: [Node]
            init(name: String, children: [Node]) { self.name = name; self.children = children }
        }
        struct NodeMapper: PocketObjectMapper {
            var schema: PocketSchema { try! PocketSchema(json: #"{"name": "", "children{?}": ["{node}"]}"#) }
            func model(from json: PocketJSONValue) throws -> Node? {
                Node(name: json["name"].string!, children: json["children"].mappedArray(of: Node.self) ?? [])
            }
        }
        var registry = PocketSchemaRegistry()
        registry.register(NodeMapper(), for: "{node}")
        let tree = try registry.decode(Data(#"{"name": "a", "children": [{"name": "b"}, {"name": "c", "children": [{"name": "d"}]}]}"#.utf8),
                                       schema: PocketSchema(tag: "{node}"))
        let root = try XCTUnwrap(tree.mapped(as: Node.self))
        XCTAssertEqual(root.children.map(\.name), ["b", "c"])
        XCTAssertEqual(root.children[1].children.first?.name, "d")
        XCTAssertThrowsError(try registry.decode(Data(#"{"name": "a", "children": [{"name": "b"}, {"children": []}]}"#.utf8),
                                                 schema: PocketSchema(tag: "{node}"))) { error in
            XCTAssertEqual(((error as? PocketError)?.underlying as? PocketSchemaViolation)?.reason,
                           "Can't find value for key 'name' in 'root.children[1]' dictionary")
        }
    }
}
