// pocket-bench: keep-alive HTTP/1.1 load through Pocket's async API.
//
// C connections = C concurrent tasks, each sending requests back to back
// through one PocketClient (pool size C). Warmup requests first (not
// measured), then N requests in total (a shared ticket counter) or until
// --max-seconds. Reports requests/s, latency percentiles, errors, CPU per
// request (getrusage over the measured phase only) and allocations per request
// (the engine's own counter, and the whole process's when scripts/malloc-count
// is preloaded). Without --url it benchmarks an embedded epoll server
// (CPocketBenchServer) on 127.0.0.1.
import CPocketBenchServer
import Pocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

func eprint(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { buf in
        var off = 0
        while off < buf.count {
            let n = write(2, buf.baseAddress! + off, buf.count - off)
            if n <= 0 { break }
            off += n
        }
    }
}

func fail(_ message: String, code: Int32 = 1) -> Never {
    eprint("pocket-bench: \(message)")
    exit(code)
}

let options: Options
do {
    options = try Options.parse(CommandLine.arguments.dropFirst())
} catch {
    eprint("pocket-bench: \(error)")
    eprint(Options.usage)
    exit(2)
}

// The target: --url, or the embedded server.
var embedded = false
var urlString: String
if let u = options.url {
    urlString = u
    if options.serverCPU != nil { eprint("pocket-bench: --server-cpu ignored with --url") }
} else {
    if let cpu = options.serverCPU, pkbs_set_cpu(Int32(clamping: cpu)) != 0 {
        fail("--server-cpu \(cpu): no such CPU")
    }
    var port: UInt16 = 0
    if pkbs_start("127.0.0.1", 0, Int32(clamping: options.serverThreads), &port) != 0 {
        fail("embedded server: \(String(cString: strerror(errno)))")
    }
    urlString = "http://127.0.0.1:\(port)/"
    embedded = true
}
guard let url = URL(string: urlString) else { fail("not a URL: \(urlString)", code: 2) }

var config = PocketClient.Configuration()
config.maxConnectionsPerOrigin = options.connections
config.engineThreads = options.engineThreads
config.tls.caFile = options.caFile
config.tls.insecureSkipVerification = options.insecure
let client: PocketClient
do {
    client = try PocketClient(configuration: config)
} catch {
    fail("cannot start the client: \(error)")
}
var request = Request(method: .get, url: url)
if options.closeEach { request.headers["Connection"] = "close" } // a new connection (and TLS handshake) per request
var uploadBytes = 0
if let path = options.uploadFile {
    var st = stat()
    guard stat(path, &st) == 0 else { fail("--upload-file: cannot read \(path)", code: 2) }
    let size = Int(st.st_size)
    request.method = .put
    request.body = .file(URL(filePath: path))
    uploadBytes = size
}

// Warmup: opens the pool's connections and warms caches; not measured.
let warmup = Phase(limit: options.effectiveWarmup, deadline: .max, sampleCapacity: 0)
let warmTally = await runPhase(client: client, request: request, phase: warmup,
                               connections: options.connections, onLoop: options.onLoop,
                               transfer: options.transfer, uploadBytes: uploadBytes)

if let rounds = options.soakRounds {
    let soak = await runSoak(client: client, request: request, rounds: rounds, total: options.requests,
                             options: options, uploadBytes: uploadBytes)
    do { try await client.shutdown() } catch { eprint("pocket-bench: shutdown: \(error)") }
    if embedded { pkbs_stop() }
    if let e = soak.firstError { eprint("pocket-bench: first error: \(e)") }
    exit(soak.errors == 0 ? 0 : 1)
}

// Measured phase. The latency buffer is allocated and touched first.
let maxSamples = 1 << 24 // 128 MiB of UInt64; beyond it the most recent requests are kept
let measured = Phase(limit: options.requests, deadline: .max,
                     sampleCapacity: min(options.requests, maxSamples))
let mallocCounter = MallocCounter()

let heap0 = mallocCounter.count()
let engine0 = PocketClient.engineAllocationCount
let server0 = embedded ? pkbs_cpu_time_ns() : 0
let cpu0 = processCPUNanos()
let t0 = monotonicNanos()
if let s = options.maxSeconds {
    measured.deadline = t0 &+ UInt64(s * 1e9)
}
let tally = await runPhase(client: client, request: request, phase: measured,
                           connections: options.connections, onLoop: options.onLoop,
                           transfer: options.transfer, uploadBytes: uploadBytes)
let t1 = monotonicNanos()
let cpu1 = processCPUNanos()
let server1 = embedded ? pkbs_cpu_time_ns() : 0
let engine1 = PocketClient.engineAllocationCount
let heap1 = mallocCounter.count()

let report = Report(
    url: urlString,
    embedded: embedded,
    connections: options.connections,
    engineThreads: options.engineThreads,
    onLoop: options.onLoop,
    warmup: options.effectiveWarmup,
    tally: tally,
    elapsedNanos: t1 &- t0,
    latencies: measured.sortedLatencies(count: tally.requests),
    cpuNanos: cpu1 &- cpu0,
    serverCPUNanos: server1 &- server0,
    engineAllocations: engine1 &- engine0,
    heapAllocations: heap0.flatMap { h0 in heap1.map { $0 &- h0 } }
)

do {
    try await client.shutdown()
} catch {
    eprint("pocket-bench: shutdown: \(error)")
}
if embedded { pkbs_stop() }

print(options.json ? report.json() : report.text())

if let e = tally.firstError ?? warmTally.firstError {
    eprint("pocket-bench: first error: \(e)")
}
if tally.requests > 0 && tally.errors == tally.requests {
    eprint("pocket-bench: every measured request failed")
    exit(1)
}
if tally.requests == 0 && warmTally.requests > 0 && warmTally.errors == warmTally.requests {
    eprint("pocket-bench: every request failed")
    exit(1)
}
