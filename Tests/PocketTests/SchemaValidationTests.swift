import Foundation
import XCTest
@testable import Pocket

/// Every schema error kind with its exact message, and every option.
final class SchemaValidationTests: XCTestCase {
    let schemas = PocketSchemaRegistry()

    /// Applies `schema` to `body` and returns the error, failing if none or another code.
    func failure(_ body: String, _ schema: String, code: PocketError.Code, registry: PocketSchemaRegistry? = nil,
                 options: PocketSchemaOptions? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> PocketError {
        do {
            let value = try (registry ?? schemas).decode(Data(body.utf8), schema: PocketSchema(json: schema), options: options)
            XCTFail("expected \(code), got \(value)", file: file, line: line)
        } catch let error as PocketError {
            XCTAssertEqual(error.code, code, error.message, file: file, line: line)
            return error
        }
        throw PocketError(.unknown, "unreachable")
    }

    func reason(_ error: PocketError) -> String? { (error.underlying as? PocketSchemaViolation)?.reason }

    func testMissingKey() throws {
        let error = try failure(#"{"a": 1}"#, #"{"a": 0, "b": ""}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Can't find value for key 'b' in 'root' dictionary")
        XCTAssertEqual((error.underlying as? PocketSchemaViolation)?.path.description, "root.b")
    }

    func testMissingKeyDeep() throws {
        let error = try failure(#"{"issues": [{"project": {"id": 1}}, {"project": {"name": "x"}}]}"#,
                                #"{"issues": [{"project": {"id": 0}}]}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Can't find value for key 'id' in 'root.issues[1].project' dictionary")
    }

    func testTypeMismatchForKey() throws {
        let error = try failure(#"{"id": "19448"}"#, #"{"id": 0}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), #"Type mismatch for key 'id' in 'root' dictionary: expected number, got string "19448""#)
    }

    func testTypeMismatchForArrayItem() throws {
        let error = try failure(#"{"ids": [1, "2"]}"#, #"{"ids": [0]}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), #"Type mismatch for item 1 in 'root.ids' array: expected number, got string "2""#)
    }

    func testTypeMismatchForEveryType() throws {
        let cases: [(String, String, String)] = [
            (#"{"v": 1}"#, #"{"v": ""}"#, "expected string, got number 1"),
            (#"{"v": "x"}"#, #"{"v": true}"#, #"expected boolean, got string "x""#),
            (#"{"v": {}}"#, #"{"v": []}"#, "expected array, got dictionary"),
            (#"{"v": []}"#, #"{"v": {}}"#, "expected dictionary, got array"),
            (#"{"v": false}"#, #"{"v": 0}"#, "expected number, got boolean false"),
        ]
        for (body, schema, tail) in cases {
            let error = try failure(body, schema, code: .schemaValidationFailed)
            XCTAssertEqual(reason(error), "Type mismatch for key 'v' in 'root' dictionary: " + tail)
        }
    }

    func testTypeMismatchAtRoot() throws {
        let error = try failure("[1]", #"{"a": 0}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Type mismatch for 'root': expected dictionary, got array")
    }

    func testRequiredNullCountsAsMissing() throws {
        let error = try failure(#"{"a": null}"#, #"{"a": 0}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Can't find value for key 'a' in 'root' dictionary")
    }

    func testNullArrayElementIsATypeMismatch() throws {
        let error = try failure(#"{"a": [1, null]}"#, #"{"a": [0]}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Type mismatch for item 1 in 'root.a' array: expected number, got null")
    }

    func testTransformerFailure() throws {
        let error = try failure(#"{"d": "yesterday"}"#, #"{"d": "{date_iso8601}"}"#, code: .schemaTransformFailed)
        XCTAssertEqual(reason(error),
                       "Can't transform value for key 'd' in 'root' dictionary with {date_iso8601}: Can't create Date from string 'yesterday'")
    }

    func testTransformerTypeMismatch() throws {
        let error = try failure(#"{"d": 5}"#, #"{"d": "{date_iso8601}"}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Type mismatch for key 'd' in 'root' dictionary: expected string for {date_iso8601}, got number 5")
    }

    func testUnknownTag() throws {
        let error = try failure(#"{"x": [1]}"#, #"{"x": ["{nope}"]}"#, code: .schemaUnknownTag)
        XCTAssertEqual(reason(error),
                       "No value transformer or object mapper is registered for tag '{nope}', used for item 0 in 'root.x' array")
    }

    struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }
    struct ThrowingMapper: PocketObjectMapper {
        var schema: PocketSchema { try! PocketSchema(json: #"{"n": 0}"#) }
        func model(from json: PocketJSONValue) throws -> Int? { throw Boom() }
    }

    func testMapperFailure() throws {
        var registry = PocketSchemaRegistry()
        registry.register(ThrowingMapper(), for: "{thing}")
        let error = try failure(#"{"x": {"n": 1}}"#, #"{"x": "{thing}"}"#, code: .schemaMappingFailed, registry: registry)
        XCTAssertEqual(reason(error), "Can't map value for key 'x' in 'root' dictionary with {thing} (ThrowingMapper): boom")
        XCTAssertTrue(error.message.hasPrefix(reason(error)!))
    }

    func testDecodableMapperFailureIsAMappingFailure() throws {
        struct Needs: Decodable, Sendable { let missing: Int }
        var registry = PocketSchemaRegistry()
        registry.register(Needs.self, for: "{needs}", schema: try PocketSchema(json: #"{"n{?}": 0}"#))
        let error = try failure(#"{"x": {"n": 1}}"#, #"{"x": "{needs}"}"#, code: .schemaMappingFailed, registry: registry)
        XCTAssertTrue(reason(error)?.hasPrefix("Can't map value for key 'x' in 'root' dictionary with {needs}") ?? false,
                      error.message)
    }

    func testMalformedJSONSaysWhere() throws {
        let error = try failure(#"{"a": 1,}"#, #"{"a": 0}"#, code: .malformedJSON)
        XCTAssertEqual(error.message, "Invalid JSON at line 1, column 9: unexpected character '}', expected a key in quotes")
        let second = try failure("{\n  \"a\": tru\n}", #"{"a": 0}"#, code: .malformedJSON)
        XCTAssertEqual(second.message, "Invalid JSON at line 2, column 11: invalid literal, expected 'true'")
        let empty = try failure("", #"{"a": 0}"#, code: .malformedJSON)
        XCTAssertEqual(empty.message, "Invalid JSON at line 1, column 1: empty body, expected a JSON value")
    }

    func testNestingLimit() throws {
        let deep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
        let error = try failure(deep, #"{"{root}": []}"#, code: .jsonNestingTooDeep)
        XCTAssertEqual(error.message, "JSON nests deeper than 128 arrays and dictionaries at line 1, column 129")
        XCTAssertNoThrow(try PocketJSONValue(parsing: String(repeating: "[", count: 128) + String(repeating: "]", count: 128)))
    }

    func testSchemaNotFound() throws {
        var registry = PocketSchemaRegistry()
        XCTAssertThrowsError(try registry.decode(Data("{}".utf8), schema: .resource("Missing.response.json"))) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaNotFound)
            XCTAssertTrue("\(error)".contains("SchemaRegistry.resources is not set"), "\(error)")
        }
        registry.resources = Bundle.module.resourceURL
        XCTAssertThrowsError(try registry.decode(Data("{}".utf8), schema: .resource("Missing.response.json"))) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaNotFound)
            XCTAssertTrue("\(error)".contains("no schema file 'Missing.response.json'"), "\(error)")
        }
        // A mapper whose convention-named schema file is missing.
        struct NoFileMapper: PocketObjectMapper { func model(from json: PocketJSONValue) throws -> Int? { 1 } }
        registry.register(NoFileMapper(), for: "{nofile}")
        XCTAssertThrowsError(try registry.decode(Data(#"{"x": {}}"#.utf8), schema: PocketSchema(json: #"{"x": "{nofile}"}"#))) { error in
            XCTAssertEqual((error as? PocketError)?.code, .schemaNotFound)
            XCTAssertTrue("\(error)".contains("NoFileMapper.response.json"), "\(error)")
        }
    }

    func testInvalidSchema() throws {
        XCTAssertThrowsError(try PocketSchema(json: #"{"a": "#)) { error in
            XCTAssertEqual((error as? PocketError)?.code, .invalidSchema)
        }
        var registry = PocketSchemaRegistry()
        registry.resources = Bundle.module.resourceURL
        XCTAssertThrowsError(try registry.decode(Data("{}".utf8), schema: .resource("Broken.response.json"))) { error in
            XCTAssertEqual((error as? PocketError)?.code, .invalidSchema)
            XCTAssertTrue("\(error)".contains("Broken.response.json"), "\(error)")
        }
    }

    func testSchemaFilesAreFoundInSubdirectories() throws {
        var registry = PocketSchemaRegistry()
        registry.resources = Bundle.module.resourceURL
        let body = try registry.encode(["issue": ["project_id": 1, "subject": "x"]],
                                       schema: .request(for: RequestToCreateIssue.self))
        XCTAssertEqual(body["issue"]["subject"], "x")
    }

    func testExcerptMarksTheFailingLine() throws {
        let error = try failure(#"{"a": 1, "list": [{"id": 1}, {"id": "two", "x": true}], "z": null}"#,
                                #"{"a": 0, "list": [{"id": 0}]}"#, code: .schemaValidationFailed)
        let violation = try XCTUnwrap(error.underlying as? PocketSchemaViolation)
        XCTAssertEqual(violation.excerpt, [
            "  ...",
            #"    "a": 1,"#,
            #"    "list": ["#,
            "      {",
            #"        "id": 1"#,
            "      },",
            "      {",
            #">       "id": "two","#,
            #"        "x": true"#,
            "      }",
            "    ],",
            #"    "z": null"#,
            "  }",
        ].joined(separator: "\n"))
        XCTAssertEqual(error.message, violation.reason + "\n" + violation.excerpt)
    }

    func testExcerptOfALargeBodyIsBounded() throws {
        let items = (0..<5000).map { #"{"id": \#($0)}"# }.joined(separator: ",")
        let error = try failure(#"{"list": [\#(items), {"id": "x"}]}"#, #"{"list": [{"id": 0}]}"#, code: .schemaValidationFailed)
        let excerpt = try XCTUnwrap((error.underlying as? PocketSchemaViolation)?.excerpt)
        XCTAssertLessThanOrEqual(excerpt.split(separator: "\n").count, 15)
        XCTAssertTrue(excerpt.contains(#">       "id": "x""#), excerpt)
        XCTAssertTrue(excerpt.hasPrefix("  ..."), excerpt)

        let long = String(repeating: "x", count: 100_000)
        let wide = try failure(#"{"text": "\#(long)", "n": "1"}"#, #"{"text": "", "n": 0}"#, code: .schemaValidationFailed)
        let wideExcerpt = try XCTUnwrap((wide.underlying as? PocketSchemaViolation)?.excerpt)
        XCTAssertLessThan(wideExcerpt.count, 500)
        XCTAssertTrue(wideExcerpt.contains(#">   "n": "1""#), wideExcerpt)
    }

    func testDecodeToATypeThroughTheRegistry() throws {
        struct PocketPage: Decodable, Sendable { let total_count: Int; let issues: [Issue] }
        let page = try quickStartSchemas().decode(PocketPage.self, from: Data(Redmine.body.utf8),
                                                  schema: .response(for: RequestToGetIssues.self))
        XCTAssertEqual(page.issues.map(\.authorName), ["Reginaldo P. Fernandes Ribeiro Reginaldo", "Reginaldo P. Fernandes Ribeiro Reginaldo", nil])
        let issue = try quickStartSchemas().decode(Issue.self, from: Data(Redmine.issue(5).utf8), schema: PocketSchema(tag: "{issue}"))
        XCTAssertEqual(issue.identifier, 5)
    }

    // MARK: Schema rules

    func testNullAndEmptyArraySamplesAcceptAnything() throws {
        let value = try schemas.decode(Data(#"{"any": [1, {"b": 2}], "list": ["x", 3, null]}"#.utf8),
                                       schema: PocketSchema(json: #"{"any": null, "list": []}"#))
        XCTAssertEqual(value["list"][2], .null)
        XCTAssertEqual(value["any"][1]["b"], 2)
    }

    func testOptionalKeyMayBeAbsentOrNull() throws {
        let schema = try PocketSchema(json: #"{"a{?}": 0, "b{?}": {"c": ""}}"#)
        XCTAssertEqual(try schemas.decode(Data("{}".utf8), schema: schema), [:])
        let value = try schemas.decode(Data(#"{"a": null, "b": null}"#.utf8), schema: schema)
        XCTAssertEqual(value, [:], "nulls count as absent and are removed")
        // A present optional value is still checked.
        let error = try failure(#"{"b": {"c": 1}}"#, #"{"b{?}": {"c": ""}}"#, code: .schemaValidationFailed)
        XCTAssertEqual(reason(error), "Type mismatch for key 'c' in 'root.b' dictionary: expected string, got number 1")
    }

    func testNullsAsIs() throws {
        let options = PocketSchemaOptions(nulls: .asIs)
        let value = try schemas.decode(Data(#"{"a": null, "d": null, "l": [null, 1]}"#.utf8),
                                       schema: PocketSchema(json: #"{"a": 0, "d": "{date_iso8601}", "l": [0]}"#), options: options)
        XCTAssertEqual(value, ["a": nil, "d": nil, "l": [nil, 1]])
    }

    func testUnknownKeysKeptByDefaultOrDropped() throws {
        let body = Data(#"{"id": 1, "extra": {"deep": true}, "items": [{"n": 1, "junk": 2}]}"#.utf8)
        let schema = try PocketSchema(json: #"{"id": 0, "items": [{"n": 0}]}"#)
        XCTAssertEqual(try schemas.decode(body, schema: schema)["extra"]["deep"], true)
        let dropped = try schemas.decode(body, schema: schema, options: PocketSchemaOptions(unknownKeys: .drop))
        XCTAssertEqual(dropped, ["id": 1, "items": [["n": 1]]])
    }

    func testNumbersAndStringsCoercion() throws {
        let schema = try PocketSchema(json: #"{"n": 0, "s": "", "d": 0.5}"#)
        let body = Data(#"{"n": "42", "s": 7, "d": "2.5"}"#.utf8)
        XCTAssertThrowsError(try schemas.decode(body, schema: schema))
        let value = try schemas.decode(body, schema: schema, options: PocketSchemaOptions(coercesNumbersAndStrings: true))
        XCTAssertEqual(value, ["n": 42, "s": "7", "d": 2.5])
        let error = try failure(#"{"n": "forty", "s": "", "d": 1}"#, #"{"n": 0, "s": "", "d": 0.5}"#,
                                code: .schemaValidationFailed, options: PocketSchemaOptions(coercesNumbersAndStrings: true))
        XCTAssertEqual(reason(error), #"Type mismatch for key 'n' in 'root' dictionary: expected number, got string "forty""#)
    }

    struct EvenOnly: PocketObjectMapper {
        var schema: PocketSchema { try! PocketSchema(json: #"{"n": 0}"#) }
        func model(from json: PocketJSONValue) throws -> Int? {
            let n = json["n"].int!
            return n % 2 == 0 ? n : nil
        }
    }

    func testMapperMaySkipElements() throws {
        var registry = PocketSchemaRegistry()
        registry.register(EvenOnly(), for: "{even}")
        let value = try registry.decode(Data(#"{"all": [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}], "one{?}": {"n": 5}}"#.utf8),
                                        schema: PocketSchema(json: #"{"all": ["{even}"], "one{?}": "{even}"}"#))
        XCTAssertEqual(value["all"].mappedArray(of: Int.self), [2, 4])
        XCTAssertNil(value.object?["one"], "a skipped value leaves its key out")
    }

    func testBuiltInTransformers() throws {
        let value = try schemas.decode(
            Data(#"{"u": "https://example.com/a?b=1", "n": "4.5", "m": 3, "i": "42", "s": 17, "t": true, "d": "2015-03-22T12:53:24.250+02:00"}"#.utf8),
            schema: PocketSchema(json: #"{"u": "{url}", "n": "{number}", "m": "{number}", "i": "{int}", "s": "{string}", "t": "{string}", "d": "{date_iso8601}"}"#))
        XCTAssertEqual(value["u"].mapped(as: URL.self), URL(string: "https://example.com/a?b=1"))
        XCTAssertEqual(value["n"].mapped(as: Double.self), 4.5)
        XCTAssertEqual(value["m"].mapped(as: Double.self), 3)
        XCTAssertEqual(value["i"].mapped(as: Int.self), 42)
        XCTAssertEqual(value["s"].mapped(as: String.self), "17")
        XCTAssertEqual(value["t"].mapped(as: String.self), "true")
        XCTAssertEqual(value["d"].mapped(as: Date.self), Date(timeIntervalSince1970: 1427021604.25))
    }

    func testISO8601DatesBothWays() throws {
        let t = PocketValueTransformers.ISO8601Date()
        let cases: [(String, Double)] = [
            ("1970-01-01T00:00:00Z", 0), ("2000-02-29T23:59:59Z", 951868799), ("1969-12-31T23:59:59Z", -1),
            ("2015-03-22T10:53:24+0000", 1427021604), ("2015-03-22T05:53:24-05:00", 1427021604),
            ("2024-12-31T23:59:59.5z", 1735689599.5),
        ]
        for (text, seconds) in cases {
            XCTAssertEqual(try t.value(from: .string(text)), Date(timeIntervalSince1970: seconds), text)
        }
        for bad in ["2015-02-29T00:00:00Z", "2015-03-22", "2015-03-22T10:53:24", "2015-13-01T00:00:00Z", "2015-03-22T25:00:00Z", "x"] {
            XCTAssertThrowsError(try t.value(from: .string(bad)), bad)
        }
        XCTAssertEqual(try t.json(from: Date(timeIntervalSince1970: 1427021604)), "2015-03-22T10:53:24Z")
        XCTAssertEqual(try t.json(from: Date(timeIntervalSince1970: -0.75)), "1969-12-31T23:59:59.250Z")
        XCTAssertEqual(try t.json(from: Date(timeIntervalSince1970: -62_167_219_200)), "0000-01-01T00:00:00Z")
        XCTAssertEqual(try t.json(from: Date(timeIntervalSince1970: 253_402_300_799)), "9999-12-31T23:59:59Z")
        for outside in [Date(timeIntervalSince1970: 1e20), Date(timeIntervalSince1970: -1e20), Date(timeIntervalSince1970: .infinity),
                        Date(timeIntervalSince1970: 253_402_300_800)] {
            XCTAssertThrowsError(try t.json(from: outside))
        }
        for seconds in stride(from: -5_000_000_000.0, to: 5_000_000_000, by: 123_456_789.125) {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(try t.value(from: t.json(from: date)), date)
        }
    }

    func testPureValidatorNeverTrapsOnMutatedInput() throws {
        var registry = PocketSchemaRegistry()
        registry.register(IssueMapper(), for: "{issue}")
        registry.register(ThrowingMapper(), for: "{thing}")
        registry.resources = Bundle.module.resourceURL
        let schema = PocketSchema.response(for: RequestToGetIssues.self)
        let seed = Array(Redmine.body.utf8)
        guard case .success = seed.withUnsafeBytes({ registry.validate($0, schema: schema) }) else {
            return XCTFail("the seed must validate")
        }
        var rng = SplitMix(state: 9)
        var failures = 0
        for _ in 0..<3000 {
            var bytes = seed
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[i] = UInt8(truncatingIfNeeded: rng.next())
                case 1: bytes.remove(at: i)
                default: bytes.insert(Array(#"{}[]",:0"#.utf8)[Int(rng.next() % 8)], at: i)
                }
            }
            if case .failure = bytes.withUnsafeBytes({ registry.validate($0, schema: schema) }) { failures += 1 }
        }
        XCTAssertGreaterThan(failures, 1000, "mutations should mostly fail")
    }
}

/// The endpoint type whose name finds `Nested/RequestToCreateIssue.request.json`.
struct RequestToCreateIssue: Sendable { var subject: String? = "Add schemas" }

/// A small deterministic generator for test inputs.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}
