// libFuzzer target: the JSON parser, the JSON writer and the schema
// validator (transformers and mappers included).
//
// Input: one flags byte (schema options), then a schema sample and a
// document separated by the first NUL byte (no NUL: the text is both).
// Beyond "no crash, no hang" it checks:
//   - the parser fails only with `.malformedJSON` or `.jsonNestingTooDeep`;
//     what it accepts Foundation's JSONSerialization accepts too (an
//     independent parser; JSONParser is the stricter of the two);
//   - writer round trip: parse(write(v)) == v, and writing that again gives
//     the same bytes;
//   - `PocketSchema(data:)` fails only with `.invalidSchema`;
//   - parsing the document and the schema allocates at most a fixed amount
//     plus a multiple of their size (allocationBounded);
//   - validation (response direction) fails only with the documented codes,
//     and twice over the same input gives the same result and message;
//   - the request direction (`encode`) on the document either fails with a
//     documented code or yields JSON that parses back.
import FuzzDriver
@testable import Pocket
import Foundation

struct Item: Decodable, Sendable {
    var id: Int
    var name: String?
}

let registry: PocketSchemaRegistry = {
    var r = PocketSchemaRegistry() // {date_iso8601}, {url}, {number}, {int}, {string}
    r.register(Item.self, for: "{item}", schema: try! PocketSchema(json: #"{"id": 0, "name{?}": ""}"#))
    return r
}()

let schemaCodes: Set<PocketError.Code> = [
    .malformedJSON, .jsonNestingTooDeep, .schemaValidationFailed, .schemaTransformFailed,
    .schemaUnknownTag, .schemaMappingFailed, .invalidSchema,
]

func fail(_ message: @autoclosure () -> String) -> Never {
    fatalError("FuzzSchema: " + message())
}

func parsed(_ bytes: UnsafeRawBufferPointer) -> PocketJSONValue? {
    do {
        return try PocketJSONParser.parse(bytes)
    } catch let error as PocketError {
        guard error.code == .malformedJSON || error.code == .jsonNestingTooDeep else {
            fail("the parser failed with \(error.code): \(error.message)")
        }
        return nil
    } catch {
        fail("the parser threw a non-PocketError: \(error)")
    }
}

func describe(_ r: Result<PocketJSONValue, PocketError>) -> String {
    switch r {
    case let .success(v): return "ok " + JSONWriter.string(v, pretty: false)
    case let .failure(e): return "\(e.code): \(e.message)"
    }
}

func check(_ input: UnsafeRawBufferPointer) {
    guard let flags = input.first else { return }
    let rest = UnsafeRawBufferPointer(rebasing: input[1...])
    let nul = rest.firstIndex(of: 0)
    let schemaText = nul.map { UnsafeRawBufferPointer(rebasing: rest[..<$0]) } ?? rest
    let document = nul.map { UnsafeRawBufferPointer(rebasing: rest[($0 + 1)...]) } ?? rest

    // Parser and writer.
    if let value = allocationBounded("PocketJSONParser.parse", inputBytes: document.count, { parsed(document) }) {
        if (try? JSONSerialization.jsonObject(with: Data(document), options: [.fragmentsAllowed])) == nil {
            fail("JSONParser accepted what JSONSerialization rejects")
        }
        let written: [UInt8]
        do { written = try JSONWriter.bytes(value) } catch { fail("cannot write a parsed value: \(error)") }
        let again = written.withUnsafeBytes { parsed($0) }
        guard let again, again == value else { fail("parse(write(v)) != v for \(String(decoding: written, as: UTF8.self))") }
        guard (try? JSONWriter.bytes(again)) == written else { fail("writing is not stable") }
    }

    // Schema and validator.
    let schema: PocketSchema
    do {
        schema = try allocationBounded("PocketSchema(data:)", inputBytes: schemaText.count) {
            Result { try PocketSchema(data: Data(schemaText)) }
        }.get()
    } catch let error as PocketError {
        guard error.code == .invalidSchema else { fail("Schema(data:) failed with \(error.code)") }
        return
    } catch {
        fail("Schema(data:) threw a non-PocketError: \(error)")
    }
    var options = PocketSchemaOptions()
    options.unknownKeys = flags & 1 != 0 ? .drop : .keep
    options.coercesNumbersAndStrings = flags & 2 != 0
    options.nulls = flags & 4 != 0 ? .asIs : .absent
    let first = registry.validate(document, schema: schema, options: options)
    if case let .failure(error) = first, !schemaCodes.contains(error.code) {
        fail("validation failed with \(error.code): \(error.message)")
    }
    let second = registry.validate(document, schema: schema, options: options)
    guard describe(first) == describe(second) else { fail("validation is not deterministic") }

    // Request direction on the parsed document.
    guard let value = parsed(document) else { return }
    do {
        let json = try registry.encode(value, schema: schema, options: options).jsonData()
        guard json.withUnsafeBytes({ parsed($0) }) != nil else { fail("encode produced JSON that does not parse") }
    } catch let error as PocketError {
        guard schemaCodes.contains(error.code) else { fail("encode failed with \(error.code): \(error.message)") }
    } catch {
        fail("encode threw a non-PocketError: \(error)")
    }
}

@_cdecl("FuzzSchema_main")
public func fuzzSchemaMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    // Built before the first input (libFuzzer's leak check would charge it
    // to whichever input ran first), outside LeakSanitizer's tracking.
    _ = ignoringLeaks { registry }
    return runFuzzer(argc, argv, check)
}
