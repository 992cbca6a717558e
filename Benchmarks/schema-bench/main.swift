// schema-bench: validating and mapping a JSON response with a Pocket schema
// versus Foundation's JSONDecoder decoding the same model with no schema.
//
//   swift build -c release --product schema-bench && .build/release/schema-bench [--reps N] [--bytes B] [--only NAME]
//
// Each repetition times every contender on the same bytes (order alternating
// between repetitions); the report gives each one's median and the median
// ratio to JSONDecoder. Run in release: debug builds measure nothing useful.
import Pocket
import Foundation

var reps = 21
var bytes = 1 << 20
var only: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--reps": reps = Int(arguments.next() ?? "") ?? reps
    case "--bytes": bytes = Int(arguments.next() ?? "") ?? bytes
    case "--only": only = arguments.next() // time only contenders whose name contains this (for profiling)
    default:
        print("usage: schema-bench [--reps N] [--bytes B] [--only NAME]")
        exit(2)
    }
}

let body = Payload.make(bytes: bytes)
let pageSchema = try PocketSchema(json: Payload.pageSchema)
let issueSchema = try PocketSchema(json: Payload.issueSchema)
let rawSchema = try PocketSchema(json: Payload.pageSchema.replacingOccurrences(of: #""{issue}""#, with: Payload.issueSchema))

var handRegistry = PocketSchemaRegistry()
handRegistry.register(BenchIssueMapper(schema: issueSchema), for: "{issue}")
var decodableRegistry = PocketSchemaRegistry()
decodableRegistry.register(BenchIssue.self, for: "{issue}", schema: issueSchema)

let decoder = JSONDecoder()
decoder.dateDecodingStrategy = .iso8601

struct Contender {
    let name: String
    let run: () throws -> BenchPage
}

func page(_ value: PocketJSONValue) -> BenchPage {
    BenchPage(issues: value["issues"].mappedArray(of: BenchIssue.self)!, total_count: value["total_count"].int!,
              offset: value["offset"].int!, limit: value["limit"].int!)
}

let contenders = [
    Contender(name: "JSONDecoder (no schema)") { try decoder.decode(BenchPage.self, from: body) },
    Contender(name: "schema + hand mapper") { page(try handRegistry.decode(body, schema: pageSchema)) },
    Contender(name: "schema + Decodable mapper") { page(try decodableRegistry.decode(body, schema: pageSchema)) },
    Contender(name: "JSONDecoder, string dates") {
        let p = try decoder.decode(BenchPageStringDates.self, from: body)
        return BenchPage(issues: [], total_count: p.total_count, offset: 0, limit: 0)
    },
    Contender(name: "schema validation only") {
        _ = try PocketSchemaRegistry().decode(body, schema: rawSchema)
        return BenchPage(issues: [], total_count: 0, offset: 0, limit: 0)
    },
    Contender(name: "parse only (JSONValue)") {
        _ = try PocketJSONValue(parsing: body)
        return BenchPage(issues: [], total_count: 0, offset: 0, limit: 0)
    },
]

// Same model out of every path.
let reference = try contenders[0].run()
for contender in contenders[1...2] {
    guard try contender.run() == reference else {
        print("schema-bench: \(contender.name) produced a different model")
        exit(1)
    }
}

var samples = Array(repeating: [Double](), count: contenders.count)
let clock = ContinuousClock()
for rep in 0..<(reps + 2) {
    let order = rep % 2 == 0 ? Array(contenders.indices) : contenders.indices.reversed()
    for index in order where index == 0 || only.map({ contenders[index].name.contains($0) }) ?? true {
        let start = clock.now
        let result = try contenders[index].run()
        let elapsed = clock.now - start
        precondition(result.limit >= 0)
        if rep >= 2 { // two warm-up rounds
            samples[index].append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
    }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

let issues = reference.issues.count
print("body: \(body.count) bytes, \(issues) issues; \(reps) repetitions (+2 warm-up), medians")
let base = median(samples[0])
for (index, contender) in contenders.enumerated() where !samples[index].isEmpty {
    let m = median(samples[index])
    let ratios = zip(samples[index], samples[0]).map { $0 / $1 }
    print(contender.name.padding(toLength: 28, withPad: " ", startingAt: 0)
          + String(format: "%8.2f ms   %5.2fx JSONDecoder (median of per-rep ratios %.2fx)", m, m / base, median(ratios)))
}

// The same medians as a Markdown table (scripts/bench-page.py puts it in
// docs/BENCHMARKS.md).
print("")
print("| contender | ms | ÷ JSONDecoder (paired) |")
print("|---|---:|---:|")
for (index, contender) in contenders.enumerated() where !samples[index].isEmpty {
    let paired = median(zip(samples[index], samples[0]).map { $0 / $1 })
    print("| \(contender.name) | \(String(format: "%.2f", median(samples[index]))) | \(String(format: "%.2f", paired)) |")
}
