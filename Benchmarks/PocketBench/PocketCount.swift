import CPocketBenchCount
import Pocket
import PocketBenchKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `pocket-bench --count`: what one request costs in counts rather than time,
/// so that a change to the request path can be held to a baseline on a shared
/// machine (scripts/perf-gate.sh, Benchmarks/baseline.json).
///
/// For each delivery (`send`, the sink of `send(_:writingBodyInto:)`,
/// `stream`, and `send` through the engaged path of `--pipeline`), at one
/// connection and at 64: a warmup, then `--requests` (default 1000 at one
/// connection, 4000 at 64) measured
/// requests against the embedded server, the sending thread's spin off (a
/// busy-poll retires instructions in proportion to time, not to work). Per
/// request: user-space instructions of the client's threads and heap
/// allocation calls of the process (scripts/malloc-count, preloaded).
///
/// The request tasks run on the client's loop executor (`--on-loop`): one
/// thread runs every request, so the counts repeat (instructions to 0.1 %).
/// On the global executor they do not: which pool thread resumes a task, and
/// whether the answer comes before the task suspends, choose between paths,
/// run by run (on a 2-core VM under callgrind, at one connection the sink's
/// 20.0k or 22.6k instructions and 6.0 or 8.0 allocations per request; at 64,
/// `send`'s allocations from 1.29 to 1.52 per request).
///
/// Instructions come from perf_event_open when the kernel grants a hardware
/// counter. Otherwise this process starts the embedded server, runs itself
/// again under `valgrind --tool=callgrind` against it (the server stays
/// outside, uncounted), and passes its output and status on.
public enum PocketCount {
    /// One measured case: a delivery at a number of connections.
    struct Case {
        var delivery: String
        var bodySink: String
        var pipeline: Bool
        var connections: Int
        var key: String { "\(delivery)_c\(connections)" }
    }

    static let cases: [Case] = [1, 64].flatMap { c in
        [Case(delivery: "send", bodySink: "memory", pipeline: false, connections: c),
         Case(delivery: "sink", bodySink: "sink", pipeline: false, connections: c),
         Case(delivery: "stream", bodySink: "discard", pipeline: false, connections: c),
         Case(delivery: "pipeline", bodySink: "memory", pipeline: true, connections: c)]
    }

    /// Measured requests per case without `--requests`: at one connection the
    /// counts repeat exactly; at 64 more requests average out the batches.
    static func defaultRequests(connections: Int) -> Int { connections == 1 ? 1000 : 4000 }

    /// One case's counts.
    struct Row {
        var key: String
        var delivery: String
        var connections: Int
        var requests: Int
        var warmup: Int
        var instructions: Double
        var allocations: Double
    }

    /// Runs the counts and prints them; returns the exit status (0, or 1
    /// with the reason on stderr when something cannot be counted).
    public static func main(_ options: BenchOptions) async -> Int32 {
        guard heapCounterPreloaded else {
            eprint("pocket-bench --count: cannot count heap allocations: run it with "
                + "LD_PRELOAD=$(scripts/malloc-count/build.sh)")
            return 1
        }
        switch InstructionCounter.make() {
        case .success(let counter):
            return await count(options, counter: counter)
        case .failure(let why):
            if pkbc_on_valgrind() != 0 {
                eprint("pocket-bench --count: \(why)")
                return 1
            }
            return underCallgrind(options, because: why)
        }
    }

    static func count(_ options: BenchOptions, counter: InstructionCounter) async -> Int32 {
        if counter.source == .callgrind && options.url == nil {
            eprint("pocket-bench --count: under callgrind, give --url (the embedded server's instructions would be counted with the client's)")
            return 1
        }
        var url = options.url ?? ""
        if options.url == nil {
            do {
                let port = try EmbeddedServer.start(answer: nil, cpu: options.serverCPU, threads: options.serverThreads)
                url = "http://127.0.0.1:\(port)/"
            } catch {
                eprint("pocket-bench --count: \(error.description)")
                return error.exitCode
            }
        }
        defer { if options.url == nil { EmbeddedServer.stop() } }
        func requests(_ c: Case) -> Int {
            options.requestsGiven ? options.requests : defaultRequests(connections: c.connections)
        }
        var rows: [Row] = []
        var ioBackend: String?
        for c in cases {
            var o = options
            o.connections = c.connections
            o.onLoop = true
            o.requests = requests(c)
            o.spinMicroseconds = 0
            o.bodySink = c.bodySink
            o.pipeline = c.pipeline
            o.maxSeconds = nil
            o.soakRounds = nil
            let m: BenchMeasurement
            do {
                m = try await PocketBenchmark.run(o, url: url, embedded: options.url == nil, scenario: c.key,
                                                  instructions: counter)
            } catch let error as PocketBenchmark.Failure {
                eprint("pocket-bench --count: \(c.key): \(error.description)")
                return error.exitCode
            } catch {
                eprint("pocket-bench --count: \(c.key): \(error)")
                return 1
            }
            let r = m.report
            if r.tally.errors > 0 || r.tally.badStatus > 0 || r.tally.requests != o.requests {
                eprint("pocket-bench --count: \(c.key): \(r.tally.requests) of \(o.requests) requests, "
                    + "\(r.tally.errors) errors, \(r.tally.badStatus) bad statuses"
                    + (m.firstError.map { " (first: \($0))" } ?? ""))
                return 1
            }
            guard let instructions = r.instructionsPerRequest, let allocations = r.heapAllocationsPerRequest else {
                eprint("pocket-bench --count: \(c.key): no count: \(counter.failure ?? "heap counter unavailable")")
                return 1
            }
            ioBackend = r.ioBackend
            rows.append(Row(key: c.key, delivery: c.delivery, connections: c.connections, requests: o.requests,
                            warmup: o.effectiveWarmup,
                            instructions: instructions, allocations: allocations))
        }
        print(options.json ? json(rows, source: counter.source, ioBackend: ioBackend)
                           : text(rows, source: counter.source, ioBackend: ioBackend))
        return 0
    }

    static func json(_ rows: [Row], source: InstructionCounter.Source, ioBackend: String?) -> String {
        let m = MachineInfo.current
        var lines = ["{"]
        lines.append("  \"tool\": \"pocket-bench --count\",")
        lines.append("  \"instructions_source\": \(jsonString(source.rawValue)),")
        // {"1": 1000, "64": 4000}: measured requests per case, by connections.
        var perConnections: [Int: Int] = [:]
        for r in rows { perConnections[r.connections] = r.requests }
        lines.append("  \"requests_per_case\": {" + perConnections.sorted { $0.key < $1.key }
            .map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "},")
        lines.append("  \"spin_us\": 0,")
        lines.append("  \"executor\": \"loop\",")
        lines.append("  \"io_backend\": \(ioBackend.map(jsonString) ?? "null"),")
        lines.append("  \"machine\": {\"cpus\": \(m.cpus.map(String.init) ?? "null"), \"cpu_model\": "
            + "\(m.cpuModel.map(jsonString) ?? "null"), \"kernel\": \(m.kernel.map(jsonString) ?? "null")},")
        lines.append("  \"versions\": {\"pocket\": \(jsonString(pocketVersion)), \"swift\": \(jsonString(MachineInfo.swiftVersion))},")
        lines.append("  \"counts\": {")
        lines.append(rows.enumerated().map { i, r in
            "    \(jsonString(r.key)): {\"instructions_per_req\": \(fixedPoint(r.instructions, 1)), "
                + "\"heap_allocs_per_req\": \(fixedPoint(r.allocations, 3)), \"warmup\": \(r.warmup)}"
        }.joined(separator: ",\n"))
        lines.append("  }")
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    static func text(_ rows: [Row], source: InstructionCounter.Source, ioBackend: String?) -> String {
        var lines = ["pocket-bench --count: per request, measured after a warmup, "
            + "tasks on the client's loop, sending thread's spin off, I/O \(ioBackend ?? "?"), instructions from \(source.rawValue)"]
        func pad(_ s: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - s.count)) + s }
        lines.append("  delivery    connections   requests   user instructions   heap allocations")
        for r in rows {
            lines.append("  " + r.delivery + String(repeating: " ", count: max(0, 10 - r.delivery.count))
                + pad("\(r.connections)", 13) + pad("\(r.requests)", 11) + pad(fixedPoint(r.instructions, 0), 20)
                + pad(fixedPoint(r.allocations, 2), 19))
        }
        return lines.joined(separator: "\n")
    }

    /// Starts the embedded server here (unless `--url`), runs this program
    /// with the same arguments under callgrind against it, and returns its
    /// exit status.
    static func underCallgrind(_ options: BenchOptions, because why: CountUnavailable) -> Int32 {
        var args = Array(CommandLine.arguments.dropFirst())
        if options.url == nil {
            do {
                let port = try EmbeddedServer.start(answer: nil, cpu: options.serverCPU, threads: options.serverThreads)
                args += ["--url", "http://127.0.0.1:\(port)/"]
            } catch {
                eprint("pocket-bench --count: \(error.description)")
                return error.exitCode
            }
        }
        defer { if options.url == nil { EmbeddedServer.stop() } }
        var template = Array("/tmp/pocket-count.XXXXXX".utf8CString)
        guard let dirPointer = mkdtemp(&template) else {
            eprint("pocket-bench --count: mkdtemp: \(String(cString: strerror(errno)))")
            return 1
        }
        let dir = String(cString: dirPointer)
        defer { removeFlatDirectory(dir) }
        let out = "\(dir)/callgrind.out"
        var env: [String] = []
        var e = environ
        while let p = e.pointee { env.append(String(cString: p)); e += 1 }
        // Valgrind's DWARF reader gives up on the debug information this
        // binary carries, so callgrind runs a copy without it (symbols stay).
        let copy = "\(dir)/pocket-bench"
        switch spawnAndWait(["objcopy", "--strip-debug", selfPath(), copy], env: env) {
        case .success(0): break
        case .success(let code):
            eprint("pocket-bench --count: objcopy --strip-debug failed (status \(code))")
            return 1
        case .failure(let error):
            eprint("pocket-bench --count: cannot run objcopy (binutils) to give callgrind a copy without "
                + "debug information: \(String(cString: strerror(error.errno)))")
            return 1
        }
        let argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--quiet",
                    "--callgrind-out-file=\(out)", copy] + args
        env.append("POCKET_BENCH_CALLGRIND_OUT=\(out)")
        let status = spawnAndWait(argv, env: env)
        switch status {
        case .failure(let error) where error.errno == ENOENT:
            eprint("pocket-bench --count: cannot count instructions: \(why); the fallback, valgrind's callgrind, "
                + "is not installed (apt-get install valgrind)")
            return 1
        case .failure(let error):
            eprint("pocket-bench --count: cannot start valgrind: \(String(cString: strerror(error.errno)))")
            return 1
        case .success(let code):
            return code
        }
    }

    /// This executable's path.
    static func selfPath() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        return n > 0 ? String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    /// Runs `argv` (found on PATH) with `env`, stdio inherited; its exit
    /// status (128 + signal when killed), or the errno of posix_spawnp.
    static func spawnAndWait(_ argv: [String], env: [String]) -> Result<Int32, SpawnError> {
        var cArgs = argv.map { strdup($0) } + [nil]
        var cEnv = env.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], nil, nil, &cArgs, &cEnv)
        guard rc == 0 else { return .failure(SpawnError(errno: rc)) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .failure(SpawnError(errno: errno)) }
        }
        let signal = status & 0x7f
        return .success(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
    }

    /// posix_spawnp's or waitpid's errno.
    struct SpawnError: Error {
        var errno: Int32
    }

    /// Removes `dir` and the files in it (no subdirectories).
    static func removeFlatDirectory(_ dir: String) {
        if let d = opendir(dir) {
            while let entry = readdir(d) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink("\(dir)/\(name)") }
            }
            closedir(d)
        }
        rmdir(dir)
    }
}
