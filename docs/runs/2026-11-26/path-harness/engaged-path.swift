// The engaged request path's own cost, without the network: `client.send`
// through a `PocketTransport` that answers at once (after one
// `Task.yield()`, so concurrent tasks interleave), with the parts of
// `pocket-bench --pipeline` chosen by the first argument (m: a middleware
// adding a header, r: a retry policy, e: a live `events()` reader; none: the
// plain path) and TASKS concurrent senders. Prints process CPU per request
// for rounds 2-5. Built and run by run.sh in this folder.
import Pocket
import Foundation


struct Instant: PocketTransport {
    let response = PocketResponse(status: 200, headers: ["Content-Length": "13"], body: Data("Hello, world!".utf8))
    func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse { await Task.yield(); return response }
}
func cpuNanos() -> UInt64 { var ts = timespec(); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec) }

let parts = CommandLine.arguments.dropFirst().first ?? ""
var config = PocketClient.Configuration()
config.handling.transport = Instant()
if parts.contains("m") { config.handling.middleware = [PocketClosureMiddleware(adapt: { request, _ in
    var request = request; request.headers["X-Pocket-Bench"] = "pipeline"; return request })] }
if parts.contains("r") { config.handling.retry = PocketRetryPolicy() }
let client = try PocketClient(configuration: config)
let events = parts.contains("e") ? client.events() : nil
let listener = events.map { events in Task { for await _ in events {} } }
let request = PocketRequest(method: .get, url: URL(string: "http://127.0.0.1:1/")!)
let n = 400_000
let bench = Task.detached {
for round in 0..<5 {
    let tasks = Int(ProcessInfo.processInfo.environment["TASKS"] ?? "1")!
    let t0 = cpuNanos()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<tasks { group.addTask { for _ in 0..<(n / tasks) { _ = try await client.send(request) } } }
        try await group.waitForAll()
    }
    let t1 = cpuNanos()
    if round > 0 { print(parts.isEmpty ? "-" : parts, String(format: "%.3f", Double(t1 - t0) / Double(n) / 1000), "µs") }
}
}
try await bench.value
listener?.cancel()
