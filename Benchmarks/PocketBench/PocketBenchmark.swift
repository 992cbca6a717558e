import CPocketBenchServer
import Pocket
import PocketBenchKit
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

/// Pocket's benchmark: `pocket-bench` and `pocket bench` both run it.
///
/// C connections = C concurrent tasks, each sending requests back to back
/// through one `PocketClient` whose pool allows C connections per origin.
/// Warmup requests first (not measured), then N requests or `--max-seconds`.
public enum PocketBenchmark {
    /// Middleware every run's client installs after its own (pocket-bench's
    /// `--integrations`: the metrics and tracing middleware). Set before
    /// the first run, read by each.
    nonisolated(unsafe) public static var extraMiddleware: [any PocketMiddleware] = []

    /// Why a run could not start; `exitCode` is 2 for bad input, 1 otherwise.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, in a sentence.
        public var description: String
        /// The process exit status to use.
        public var exitCode: Int32

        public init(description: String, exitCode: Int32) {
            self.description = description
            self.exitCode = exitCode
        }
    }

    /// One measurement: against `options.urls`, or without one against the
    /// embedded epoll server (`CPocketBenchServer`, 13-byte answers) on
    /// 127.0.0.1, `options.tail.replicas` ports of it (some slow or failing
    /// as `options.tail.slowReplicas` and `failingReplicas` say, one killed
    /// during the measured phase with `killReplica`).
    public static func run(_ options: BenchOptions) async throws -> BenchMeasurement {
        if !options.urls.isEmpty {
            return try await run(options, urls: options.urls)
        }
        let ports = try EmbeddedServer.start(answer: nil, cpu: options.serverCPU, threads: options.serverThreads,
                                             replicas: options.tail.replicas, slow: options.tail.slowReplicas,
                                             failing: options.tail.failingReplicas)
        defer { EmbeddedServer.stop() }
        return try await run(options, urls: ports.map { "http://127.0.0.1:\($0)/" }, embedded: true)
    }

    /// One measurement against `url` (see `run(_:urls:embedded:inProcessServer:scenario:instructions:)`).
    public static func run(_ options: BenchOptions, url urlString: String, embedded: Bool = false,
                           inProcessServer: Bool = false, scenario: String? = nil,
                           instructions: InstructionCounter? = nil) async throws -> BenchMeasurement {
        try await run(options, urls: [urlString], embedded: embedded, inProcessServer: inProcessServer,
                      scenario: scenario, instructions: instructions)
    }

    /// One measurement against `urls`, the replicas of one set (one URL:
    /// one server), taken in turn. `embedded`: the server is
    /// `CPocketBenchServer` in this process (its CPU is reported apart);
    /// `inProcessServer`: another server in this process (reported as
    /// embedded, its CPU not apart); `scenario` names the run in the report;
    /// `instructions` counts the measured phase's instructions.
    public static func run(_ options: BenchOptions, urls urlStrings: [String], embedded: Bool = false,
                    inProcessServer: Bool = false, scenario: String? = nil,
                    instructions: InstructionCounter? = nil) async throws -> BenchMeasurement {
        var urls: [URL] = []
        for urlString in urlStrings {
            guard let url = URL(string: urlString), url.scheme == "http" || url.scheme == "https" else {
                throw Failure(description: "not an http(s) URL: \(urlString)", exitCode: 2)
            }
            urls.append(url)
        }
        guard let urlString = urlStrings.first else { throw Failure(description: "no URL to load", exitCode: 2) }
        var config = PocketClient.Configuration()
        config.maxConnectionsPerOrigin = options.connections
        config.engineThreads = options.engineThreads
        config.tls.caFile = options.caFile
        config.tls.insecureSkipVerification = options.insecure
        if let compressed = options.compressed { config.decompression = compressed }
        // Like curl-bench: no proxy from the environment, only --proxy.
        config.proxyFromEnvironment = false
        do {
            config.proxy = try options.proxy.map { try PocketProxy($0) }
        } catch {
            throw Failure(description: "--proxy: \(error)", exitCode: 2)
        }
        config.unixSocketPath = options.unixSocket
        if let backend = options.ioBackend.flatMap(PocketIOBackend.init(rawValue:)) { config.ioBackend = backend }
        if let spin = options.spinMicroseconds { config.sendingThreadSpin = .microseconds(spin) }
        if options.pipeline {
            // The engaged path: a middleware that adds a header, a retry
            // policy (nothing to retry against a healthy server), events.
            config.handling.middleware = [PocketClosureMiddleware(adapt: { request, _ in
                var request = request
                request.headers["X-Pocket-Bench"] = "pipeline"
                return request
            })]
            config.handling.retry = PocketRetryPolicy()
        }
        config.handling.middleware += extraMiddleware
        let tail = try TailPolicies(options.tail, urls: urls, config: &config)
        let client: PocketClient
        do {
            client = try PocketClient(configuration: config)
        } catch {
            throw Failure(description: "cannot start the client: \(error)", exitCode: 1)
        }
        var request = tail.request(PocketRequest(method: .get, url: urls[0]))
        if options.closeEach { request.headers["Connection"] = "close" } // a new connection (and TLS handshake) per request
        var uploadBytes = 0
        if let path = options.uploadFile {
            var st = stat()
            guard stat(path, &st) == 0 else { throw Failure(description: "--upload-file: cannot read \(path)", exitCode: 2) }
            request.method = .put
            request.body = .file(URL(filePath: path))
            uploadBytes = Int(st.st_size)
        } else if let path = options.uploadForm {
            var st = stat()
            guard stat(path, &st) == 0 else { throw Failure(description: "--upload-form: cannot read \(path)", exitCode: 2) }
            var form = PocketMultipartForm()
            form.addFile("file", at: URL(filePath: path))
            request.method = .post
            request.body = .multipart(form)
            // The file's bytes, as curl -F's speed_upload counts the whole body (about 200 bytes more).
            uploadBytes = Int(st.st_size)
        }
        var setup = MeasureSetup(clientName: "pocket", scenario: scenario, url: urlString)
        setup.replicas = urls.count
        setup.embedded = embedded || inProcessServer
        var failover: Failover?
        if embedded {
            setup.serverCPUNanos = { pkbs_cpu_time_ns() }
            let replicas = Int32(urls.count)
            setup.serverRequests = { (0..<replicas).reduce(0) { $0 + Int(pkbs_replica_requests($1)) } }
            if let kill = options.tail.killReplica, let port = urls[kill.index - 1].port {
                let watch = Failover(kill, port: UInt16(port), set: tail.set)
                setup.measuredPhaseStarts = { watch.phaseStarted(at: $0) }
                setup.failover = { watch.outcome() }
                failover = watch
            }
        }
        setup.engineAllocations = { PocketClient.engineAllocationCount }
        setup.executor = options.onLoop ? client.executor : nil
        setup.engineThreads = options.engineThreads
        setup.pipeline = options.pipeline
        setup.ioBackend = client.ioBackend.rawValue
        // One live subscription, drained as events come.
        let events = options.pipeline ? client.events() : nil
        // Under --count on the loop executor (one thread, so the events' hand-off
        // between producer and listener takes the same path every time).
        let listenerExecutor: (any TaskExecutor)? = options.count ? client.executor : nil
        let listener = events.map { events in
            Task(executorPreference: listenerExecutor) { for await _ in events {} }
        }
        defer { listener?.cancel() }
        setup.versions["pocket"] = pocketVersion
        setup.instructions = instructions
        if !options.tail.policyFlags.isEmpty { setup.tailCounts = { tail.counts(of: client) } }
        setup.balancing = tail.balancing
        let bench = PocketBenchClient(client: client, targets: BenchTargets(request, replicas: tail.targets(urls)),
                                      transfer: Transfer(options.bodySink), uploadBytes: uploadBytes,
                                      deadline: tail.deadline, failover: failover)
        let measurement = await measure(bench, options: options, setup: setup)
        try? await client.shutdown()
        return measurement
    }
}

/// Pocket's version for the report: "0.2.0" of the default `User-Agent: Pocket/0.2.0`.
let pocketVersion: String = {
    let agent = PocketClient.Configuration().defaultHeaders["User-Agent"] ?? "Pocket/?"
    return String(agent.split(separator: "/").last ?? "?")
}()

/// The in-process `CPocketBenchServer` (one per process).
public enum EmbeddedServer {
    /// Starts it on 127.0.0.1 (a free port) answering every request with
    /// `answer` (nil: the 13-byte default); returns the port. With
    /// `tlsCertificate`, it speaks TLS with a certificate for `localhost` it
    /// makes now, whose PEM it writes at that path (the client's CA file).
    public static func start(answer: [UInt8]?, cpu: Int? = nil, threads: Int = 1,
                             tlsCertificate: String? = nil) throws(PocketBenchmark.Failure) -> UInt16 {
        try start(answer: answer, cpu: cpu, threads: threads, tlsCertificate: tlsCertificate, replicas: 1, slow: [])[0]
    }

    /// Starts it as `start(answer:cpu:threads:tlsCertificate:)` does, on
    /// `replicas` ports (the replicas of one set, served by the same
    /// threads), replica `slow[i].index` (from 1) answering a share of its
    /// requests late and replica `failing[i].index` answering every request
    /// with its status; returns the ports, replica 1's first.
    public static func start(answer: [UInt8]?, cpu: Int? = nil, threads: Int = 1, tlsCertificate: String? = nil,
                             replicas: Int, slow: [TailOptions.SlowReplica],
                             failing: [TailOptions.FailingReplica] = []) throws(PocketBenchmark.Failure) -> [UInt16] {
        guard pkbs_set_replicas(Int32(clamping: replicas)) == 0 else {
            throw .init(description: "--replicas \(replicas): \(String(cString: strerror(errno)))", exitCode: 2)
        }
        for i in Int32(0)..<64 { // no replica slow or failing but those given
            _ = pkbs_set_slow(i, 0, 0)
            _ = pkbs_set_status(i, 0)
        }
        for f in failing {
            guard pkbs_set_status(Int32(clamping: f.index - 1), Int32(clamping: f.status)) == 0 else {
                throw .init(description: "--failing-replica \(f.index): \(String(cString: strerror(errno)))", exitCode: 2)
            }
        }
        for s in slow {
            guard pkbs_set_slow(Int32(clamping: s.index - 1), s.share, TailOptions.nanoseconds(s.delay)) == 0 else {
                throw .init(description: "--slow-replica \(s.index): \(String(cString: strerror(errno)))", exitCode: 2)
            }
        }
        let set = answer.map { bytes in bytes.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { pkbs_set_answer($0.baseAddress, $0.count) }
        } } ?? pkbs_set_answer(nil, 0)
        guard set == 0 else { throw .init(description: "embedded server: \(String(cString: strerror(errno)))", exitCode: 1) }
        guard pkbs_set_tls(tlsCertificate != nil, tlsCertificate) == 0 else {
            throw .init(description: "embedded server: TLS: \(String(cString: strerror(errno)))", exitCode: 1)
        }
        if let cpu, pkbs_set_cpu(Int32(clamping: cpu)) != 0 {
            throw .init(description: "--server-cpu \(cpu): no such CPU", exitCode: 2)
        }
        guard pkbs_start("127.0.0.1", 0, Int32(clamping: threads), nil) == 0 else {
            throw .init(description: "embedded server: \(String(cString: strerror(errno)))", exitCode: 1)
        }
        return (0..<Int32(replicas)).map { pkbs_replica_port($0) }
    }

    /// Stops it (a no-op when none runs).
    public static func stop() { pkbs_stop() }
}
