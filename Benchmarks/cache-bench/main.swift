// cache-bench: what the response cache saves — a fresh hit and a 304
// revalidation against a plain network GET of the same resource, through
// the same client API (`send`), sequentially on one keep-alive connection.
//
//   scripts/bench-cache.sh            (nginx on loopback, release build, the table)
//   .build/release/cache-bench --url http://127.0.0.1:18090 [--requests N] [--reps R]
//
// The server must serve BASE/fresh/body.bin with a max-age (a fresh hit
// after the first request) and BASE/revalidate/body.bin with `no-cache` and
// an ETag (every request a conditional one answered 304). Each repetition
// runs every contender once (order rotating); the report gives the median
// requests/s, the median wall time and CPU time (user + system, every
// thread of the process) per request, and the ratio to the network GET.
// On a loaded machine the wall time of a network round trip is mostly
// waiting to be scheduled; the CPU time per request is the figure that
// carries over.
import Pocket
import Foundation

var base: String?
var requests = 20_000
var reps = 5
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--url": base = arguments.next()
    case "--requests": requests = Int(arguments.next() ?? "") ?? requests
    case "--reps": reps = Int(arguments.next() ?? "") ?? reps
    default:
        print("usage: cache-bench --url BASE [--requests N] [--reps R]")
        exit(2)
    }
}
guard let base, let fresh = URL(string: base + "/fresh/body.bin"), let stale = URL(string: base + "/revalidate/body.bin") else {
    print("usage: cache-bench --url BASE [--requests N] [--reps R]")
    exit(2)
}

struct Contender {
    var name: String
    var client: PocketClient
    var url: URL
    /// What every response must say, so the run measures what it names.
    var check: @Sendable (PocketResponse) -> Bool
}

func makeClient(_ cache: PocketResponseCache?) throws -> PocketClient {
    var config = PocketClient.Configuration()
    config.handling.cache = cache
    return try PocketClient(configuration: config)
}

let directory = FileManager.default.temporaryDirectory.appending(path: "cache-bench-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }
let contenders = [
    Contender(name: "network GET (no cache)", client: try makeClient(nil), url: fresh) { !$0.fromCache && $0.status == 200 },
    Contender(name: "fresh hit, memory store", client: try makeClient(PocketResponseCache(memoryCapacity: 64 << 20)), url: fresh) {
        $0.fromCache && !$0.revalidated
    },
    Contender(name: "fresh hit, disk store", client: try makeClient(try PocketResponseCache(directory: directory, capacity: 64 << 20)),
              url: fresh) { $0.fromCache && !$0.revalidated },
    Contender(name: "304 revalidation, memory store", client: try makeClient(PocketResponseCache(memoryCapacity: 64 << 20)), url: stale) {
        $0.revalidated && $0.status == 200
    },
]

// Warm up: a connection per client, the entries stored.
for c in contenders {
    for _ in 0..<100 { _ = try await c.client.send(PocketRequest(url: c.url)) }
}

/// User + system CPU seconds of the whole process so far.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

var seconds: [String: [Double]] = [:]
var cpu: [String: [Double]] = [:]
var bodyBytes = 0
for rep in 0..<reps {
    for i in contenders.indices {
        let c = contenders[(i + rep) % contenders.count]
        let request = PocketRequest(url: c.url)
        let start = ContinuousClock.now
        let cpuStart = cpuSeconds()
        for _ in 0..<requests {
            let response = try await c.client.send(request)
            guard c.check(response) else {
                print("cache-bench: \(c.name): unexpected response \(response.status) fromCache=\(response.fromCache) revalidated=\(response.revalidated)")
                exit(1)
            }
            bodyBytes = response.body.count
        }
        let elapsed = ContinuousClock.now - start
        cpu[c.name, default: []].append(cpuSeconds() - cpuStart)
        seconds[c.name, default: []].append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

let network = median(seconds[contenders[0].name]!)
print("cache-bench: \(requests) sequential requests x \(reps) reps, body \(bodyBytes) bytes, medians")
print("contender                          req/s     us/req  CPU us/req   vs network GET")
for c in contenders {
    let s = median(seconds[c.name]!)
    let rps = Double(requests) / s
    let line = c.name.padding(toLength: 32, withPad: " ", startingAt: 0)
        + String(format: "%9.0f  %9.2f  %10.2f   %6.2fx", rps, s / Double(requests) * 1e6,
                 median(cpu[c.name]!) / Double(requests) * 1e6, network / s)
    print(line)
}
// The same medians as a Markdown table (scripts/bench-page.py puts it in
// docs/BENCHMARKS.md).
let networkCPU = median(cpu[contenders[0].name]!)
print("")
print("| contender | req/s | CPU µs/req | CPU against the network GET |")
print("|---|---:|---:|---:|")
for c in contenders {
    let s = median(seconds[c.name]!), cpuSeconds = median(cpu[c.name]!)
    let against = cpuSeconds <= networkCPU ? String(format: "%.1f× less", networkCPU / cpuSeconds)
        : String(format: "%.1f× more", cpuSeconds / networkCPU)
    let rps = String(format: "%.0f", Double(requests) / s), perRequest = String(format: "%.0f", cpuSeconds / Double(requests) * 1e6)
    print("| \(c.name) | \(rps) | \(perRequest) | \(c.name == contenders[0].name ? "1.00×" : against) |")
}
for c in contenders { try await c.client.shutdown() }
