#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Command-line options, parsed by hand (the package has no dependencies).
struct Options {
    var url: String?
    var requests = 100_000
    var connections = 64
    var warmup: Int?
    var maxSeconds: Double?
    var json = false
    var serverCPU: Int?
    var serverThreads = 1
    var engineThreads = 1
    var onLoop = false
    var caFile: String?
    var insecure = false
    var closeEach = false
    var transfer = Transfer.memory
    var uploadFile: String?
    var soakRounds: Int?

    /// Warmup requests when `--warmup` is not given: enough to open every
    /// connection and run each a few times.
    var effectiveWarmup: Int { warmup ?? max(1_000, 16 * connections) }

    static let usage = """
        usage: pocket-bench [--url URL] [--requests N] [--connections C] [--warmup W]
                            [--max-seconds T] [--json] [--server-cpu K] [--server-threads S]
                            [--engine-threads T] [--on-loop] [--cacert FILE] [-k] [--close]
                            [--body-sink memory|discard|file:PATH] [--upload-file PATH]
                            [--soak K]

          --url URL            server to load (http://...); without it an embedded epoll
                               server is started on 127.0.0.1 (random port)
          --requests N         measured requests in total (default 100000)
          --connections C      concurrent tasks, each sending back to back over the
                               client's keep-alive pool (default 64; also the pool size)
          --warmup W           unmeasured requests first (default max(1000, 16*C))
          --max-seconds T      end the measured phase after T seconds even if N is not reached
          --json               print one JSON object instead of the table
          --server-cpu K       pin the embedded server's thread(s) to CPU K (K, K+1, ...)
          --server-threads S   embedded server loop threads (default 1)
          --engine-threads T   Pocket engine event-loop threads (default 1)
          --on-loop            run the request tasks on the client's loop executor
                               (withTaskExecutorPreference) instead of the global pool
          --cacert FILE        trust this CA (PEM) for https URLs instead of the system store
          -k, --insecure       no certificate verification for https URLs (benchmarks only)
          --close              send Connection: close: every request opens a new
                               connection (measures connect + TLS handshake cost)
          --body-sink S        memory (default: client.send collects the body), discard
                               (client.stream, chunks dropped: like > /dev/null), or
                               file:PATH (client.download: the engine writes the file)
          --upload-file PATH   PUT the file as the body (sendfile on plain connections)
          --soak K             soak test: the N requests in K rounds, printing resident
                               memory and open file descriptors before and after each
                               (no latency report); with --close, new connections
        """

    enum ParseError: Error, CustomStringConvertible {
        case message(String)
        var description: String {
            switch self { case .message(let m): return m }
        }
    }

    static func parse(_ args: ArraySlice<String>) throws(ParseError) -> Options {
        var o = Options()
        // Accept --name=value too: split it before parsing.
        var expanded: [String] = []
        for a in args {
            if a.hasPrefix("--"), let eq = a.firstIndex(of: "=") {
                expanded.append(String(a[..<eq]))
                expanded.append(String(a[a.index(after: eq)...]))
            } else {
                expanded.append(a)
            }
        }
        var it = expanded.makeIterator()
        func value(_ name: String) throws(ParseError) -> String {
            guard let v = it.next() else { throw .message("\(name) needs a value") }
            return v
        }
        func int(_ name: String, min: Int) throws(ParseError) -> Int {
            let s = try value(name)
            guard let v = Int(s.filter { $0 != "_" }), v >= min else {
                throw .message("\(name): expected an integer >= \(min), got '\(s)'")
            }
            return v
        }
        while let arg = it.next() {
            switch arg {
            case "--url": o.url = try value(arg)
            case "--requests", "-n": o.requests = try int(arg, min: 1)
            case "--connections", "-c": o.connections = try int(arg, min: 1)
            case "--warmup": o.warmup = try int(arg, min: 0)
            case "--max-seconds", "-d":
                let s = try value(arg)
                guard let v = Double(s), v > 0 else { throw .message("\(arg): expected seconds > 0, got '\(s)'") }
                o.maxSeconds = v
            case "--json": o.json = true
            case "--server-cpu": o.serverCPU = try int(arg, min: 0)
            case "--server-threads": o.serverThreads = try int(arg, min: 1)
            case "--engine-threads": o.engineThreads = try int(arg, min: 1)
            case "--on-loop": o.onLoop = true
            case "--cacert": o.caFile = try value(arg)
            case "-k", "--insecure": o.insecure = true
            case "--close": o.closeEach = true
            case "--body-sink":
                let s = try value(arg)
                guard let t = Transfer.parse(s) else { throw .message("\(arg): expected memory, discard or file:PATH, got '\(s)'") }
                o.transfer = t
            case "--upload-file": o.uploadFile = try value(arg)
            case "--soak": o.soakRounds = try int(arg, min: 1)
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                throw .message("unknown argument '\(arg)'")
            }
        }
        return o
    }
}
