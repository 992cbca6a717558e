#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The benchmark clients' options (`pocket-bench`, and the peers in
/// `Benchmarks/Peers`), parsed by hand so every client takes the same flags
/// the same way (`--name value` or `--name=value`). Defaults are pocket-bench's.
public struct BenchOptions: Sendable {
    /// The server to load: the first `--url`; nil: pocket-bench starts its
    /// embedded server(s).
    public var url: String? {
        get { urls.first }
        set { urls = newValue.map { [$0] } ?? [] }
    }
    /// Every `--url`, in order: the replicas of one set (requests go to them
    /// as `tail.balance` says).
    public var urls: [String] = []
    /// `--rate R`: send R requests a second whatever the answers do (open
    /// loop, latency from each request's due time: `OpenLoopSchedule`);
    /// nil (default): each task sends its next request when its last is answered.
    public var rate: Double?
    /// Replicas, a slow one, and the policies against slow replicas.
    public var tail = TailOptions()
    /// Measured requests in total (default 100000; with `count`, per case, default 2000).
    public var requests = 100_000
    /// `--requests` was given (`count` has a default of its own).
    public var requestsGiven = false
    /// `--count` (pocket-bench): user-space instructions and heap allocations
    /// per request of each delivery, at 1 and at 64 connections.
    public var count = false
    /// Concurrent tasks, and the pool size (default 64).
    public var connections = 64
    /// Unmeasured requests first; nil: `effectiveWarmup`.
    public var warmup: Int?
    /// Ends the measured phase after this many seconds (default: none).
    public var maxSeconds: Double?
    /// One JSON object instead of the table.
    public var json = false
    /// Pin the embedded server's threads from this CPU on (default: not pinned).
    public var serverCPU: Int?
    /// Embedded server loop threads (default 1).
    public var serverThreads = 1
    /// Pocket engine loop threads (default 1).
    public var engineThreads = 1
    /// Run the request tasks on Pocket's loop executor (default: the global one).
    public var onLoop = false
    /// Pocket's I/O backend: `auto`, `epoll` or `io_uring`; nil: the
    /// client's default (`POCKET_IO_BACKEND`, else auto).
    public var ioBackend: String?
    /// Pocket's `sendingThreadSpin` in microseconds; nil: the client's default.
    public var spinMicroseconds: Int?
    /// Engage Pocket's whole request path: one middleware that adds a
    /// header, a retry policy and one live `events()` subscription.
    public var pipeline = false
    /// Install PocketMetrics' and PocketTracing's middleware, with backends
    /// bootstrapped: `noop` (swift-metrics' and swift-distributed-tracing's
    /// no-op ones) or `memory` (in-memory: every metric value and span
    /// kept); nil: none.
    public var integrations: String?
    /// A PEM CA file for https URLs instead of the system store.
    public var caFile: String?
    /// No certificate verification (benchmarks against throwaway certificates).
    public var insecure = false
    /// `Connection: close` on every request (default false: keep-alive).
    public var closeEach = false
    /// `memory`, `discard`, `sink` or `file:PATH` (pocket-bench's `--body-sink`).
    public var bodySink = "memory"
    /// PUT this file as the body (default: GET).
    public var uploadFile: String?
    /// POST this file as a multipart/form-data form of one file part named
    /// `file` (like `curl -F file=@PATH`).
    public var uploadForm: String?
    /// Ask for gzip/deflate and decode: true, false, or nil for the client's default.
    public var compressed: Bool?
    /// Soak test (`--soak K`): the measured requests in K rounds with resident
    /// memory and open descriptors printed after each; nil (default): one phase.
    public var soakRounds: Int?
    /// `--proxy URL`: an HTTP proxy (forwarding for http, CONNECT for https).
    public var proxy: String?
    /// `--unix-socket PATH`: connect to this Unix domain socket instead.
    public var unixSocket: String?

    /// pocket-bench's defaults.
    public init() {}

    /// Warmup requests when `--warmup` is not given: enough to open every
    /// connection and run each a few times.
    public var effectiveWarmup: Int { warmup ?? max(1_000, 16 * connections) }

    /// pocket-bench's usage text.
    public static let usage = """
        usage: pocket-bench [--url URL] [--requests N] [--connections C] [--warmup W]
                            [--max-seconds T] [--json] [--server-cpu K] [--server-threads S]
                            [--engine-threads T] [--on-loop] [--pipeline] [--io-backend B]
                            [--spin-us U]
                            [--cacert FILE] [-k] [--close]
                            [--body-sink memory|discard|sink|file:PATH] [--upload-file PATH]
                            [--upload-form PATH] [--compressed] [--soak K] [--proxy URL]
                            [--unix-socket PATH] [--integrations noop|memory|discard] [--count]
                            [--rate R] [--replicas N] [--slow-replica K:P:DELAY]
                            [--hedge-after DURATION|pNN] [--max-hedges N]
                            [--balance round-robin|p2c] [--retry-budget PCT]
                            [--eject-after N] [--deadline DURATION] [--retries N]
                            [--kill-replica K:T] [--failing-replica K:STATUS]

          --url URL            server to load (http://...); without it an embedded epoll
                               server is started on 127.0.0.1 (random port). Given
                               several times: the replicas of one set, taken in turn
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
          --pipeline           a middleware adding a header, a retry policy and a live
                               events() subscription on every request (the engaged path)
          --io-backend B       auto (default: io_uring where the kernel allows it), epoll
                               or io_uring: how Pocket's engine writes to its sockets
          --spin-us U          how long a one-at-a-time sender busy-polls for its answer
                               before it sleeps (Configuration.sendingThreadSpin;
                               default 50; 0: never)
          --cacert FILE        trust this CA (PEM) for https URLs instead of the system store
          -k, --insecure       no certificate verification for https URLs (benchmarks only)
          --close              send Connection: close: every request opens a new
                               connection (measures connect + TLS handshake cost)
          --body-sink S        memory (default: client.send collects the body), discard
                               (client.stream, chunks dropped: like > /dev/null), sink
                               (client.send(_:writingBodyInto:), copied once into an
                               array: PocketNIO's ByteBuffer path), or file:PATH
                               (client.download: the engine writes the file)
          --upload-file PATH   PUT the file as the body (sendfile on plain connections)
          --upload-form PATH   POST the file as a multipart/form-data form of one file
                               part named "file" (like curl -F file=@PATH)
          --compressed         ask for gzip/deflate and decode (Pocket does by default)
          --soak K             soak test: the N requests in K rounds, printing resident
                               memory and open file descriptors (stderr) before and after
                               each; no latencies (docs/FUZZING.md)
          --proxy URL          through this HTTP proxy (http://[user:pass@]host:port):
                               forwarded for http URLs, a CONNECT tunnel for https
          --unix-socket PATH   connect to this Unix domain socket (the URL names the origin)
          --integrations B     PocketMetricsMiddleware and PocketTracingMiddleware on every
                               request, swift-metrics and swift-distributed-tracing
                               bootstrapped with B: noop (their no-op backends),
                               memory (in-memory ones that keep every value and span)
                               or discard (ones that record and keep nothing: the
                               middleware's own work)
          --count              counts instead of times: user-space instructions and heap
                               allocations per request of send, sink, stream and
                               --pipeline, at 1 connection and at 64, the sending
                               thread's spin off; --requests per case (default 2000).
                               Needs LD_PRELOAD=$(scripts/malloc-count/build.sh); counts
                               instructions with perf_event_open, or else under
                               valgrind's callgrind (scripts/perf-gate.sh)

        Fixed rate and replicas (tail latency; durations as 800ns, 250us, 50ms, 1.5s):
          --rate R             open loop: R requests a second, each due at its time
                               whatever the answers do, at most C in flight; latency is
                               measured from the due time (coordinated omission corrected).
                               Offered = R x --max-seconds (default 10), or --requests N;
                               a request not started by the end is offered, not sent
          --replicas N         N embedded servers, each on its own port (default 1)
          --slow-replica K:P:DELAY
                               embedded replica K (from 1) answers a share P (0.05 or 5%)
                               of its requests DELAY late; may be given for several K
          --hedge-after D|pNN  send a hedge after D, or after that percentile of the
                               recent latencies (p95)
          --max-hedges N       extra attempts per request at most (needs --hedge-after)
          --balance B          round-robin (default) or p2c (power of two choices)
          --retry-budget PCT   the default retry policy, its retries at most PCT% of
                               requests (plus 10 a second); off: no budget (the
                               client's default is 20%)
          --retries N          a retry policy of N retries (N + 1 attempts; backoff
                               exponential from 100 ms, full jitter) of the GETs on
                               transport errors and 408, 429, 500, 502, 503, 504
          --eject-after N      eject a replica after N consecutive failures
          --deadline D         every request, its retries and hedges end by D
          --kill-replica K:T   embedded replica K stops T into the measured phase (3 is
                               seconds, or 500ms) as a killed process: connections
                               refused, open ones reset. Reported: ms from the kill to
                               the first ejection, failed requests started before and
                               after it (ejected_after_kill_ms, errors_before_ejection,
                               errors_after_ejection)
          --failing-replica K:STATUS
                               embedded replica K answers every request with STATUS
                               (400 to 599, e.g. 503) and an empty body. With embedded
                               replicas the report has server_requests: the requests
                               they received, retries included
        """

    /// A flag that is unknown or lacks a valid value.
    public enum ParseError: Error, CustomStringConvertible {
        case message(String)
        public var description: String {
            switch self { case .message(let m): return m }
        }
    }

    /// Parses arguments (without the program name). `-h`/`--help` prints
    /// `usage` and exits.
    /// `--count` and `--integrations` are accepted only with `countAllowed` (pocket-bench's own).
    public static func parse(_ args: ArraySlice<String>, usage: String = BenchOptions.usage,
                             countAllowed: Bool = false) throws(ParseError) -> BenchOptions {
        var o = BenchOptions()
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
            case "--url": o.urls.append(try value(arg))
            case "--rate":
                let s = try value(arg)
                guard let v = Double(s.filter { $0 != "_" }), v.isFinite, v > 0, v <= 10_000_000 else {
                    throw .message("\(arg): expected requests per second > 0 (at most 10000000), got '\(s)'")
                }
                o.rate = v
            case "--requests", "-n":
                o.requests = try int(arg, min: 1)
                o.requestsGiven = true
            case "--count":
                guard countAllowed else { throw .message("--count: pocket-bench's only (scripts/perf-gate.sh)") }
                o.count = true
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
            case "--pipeline": o.pipeline = true
            case "--spin-us": o.spinMicroseconds = try int(arg, min: 0)
            case "--io-backend":
                let s = try value(arg)
                guard ["auto", "epoll", "io_uring"].contains(s) else {
                    throw .message("\(arg): expected auto, epoll or io_uring, got '\(s)'")
                }
                o.ioBackend = s
            case "--cacert": o.caFile = try value(arg)
            case "-k", "--insecure": o.insecure = true
            case "--close": o.closeEach = true
            case "--body-sink":
                let s = try value(arg)
                guard s == "memory" || s == "discard" || s == "sink" || (s.hasPrefix("file:") && s.count > 5) else {
                    throw .message("\(arg): expected memory, discard, sink or file:PATH, got '\(s)'")
                }
                o.bodySink = s
            case "--upload-file": o.uploadFile = try value(arg)
            case "--upload-form": o.uploadForm = try value(arg)
            case "--compressed": o.compressed = true
            case "--soak": o.soakRounds = try int(arg, min: 1)
            case "--proxy": o.proxy = try value(arg)
            case "--unix-socket": o.unixSocket = try value(arg)
            case "--integrations":
                guard countAllowed else { throw .message("--integrations: pocket-bench's only") }
                let s = try value(arg)
                guard ["noop", "memory", "discard"].contains(s) else {
                    throw .message("\(arg): expected noop, memory or discard, got '\(s)'")
                }
                o.integrations = s
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                guard try o.tail.parse(arg, value: { () throws(ParseError) in try value(arg) }) else {
                    throw .message("unknown argument '\(arg)'")
                }
            }
        }
        try o.tail.validate(urls: o.urls)
        if o.rate != nil && o.soakRounds != nil { throw .message("--rate and --soak: one or the other") }
        if o.rate != nil && o.count { throw .message("--rate and --count: one or the other (--count counts, it does not time)") }
        return o
    }
}
