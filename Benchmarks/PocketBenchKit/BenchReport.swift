import Histogram

/// The results of the measured phase, as a table (`text()`) or one JSON
/// object (`json()`); every benchmark client prints it the same way.
public struct BenchReport: Sendable {
    /// What ran: `"pocket"`, `"ahc"`, `"urlsession"`.
    public var client: String
    /// The scenario's name (`pocket bench`'s embedded scenarios), or nil.
    public var scenario: String?
    var url: String
    /// The replicas loaded (1: one server).
    public var replicas = 1
    /// `--rate`'s requests per second; nil: closed loop.
    public var rate: Double?
    /// Requests a fixed-rate phase offered (`OpenLoopSchedule`); nil: closed loop.
    /// The requests sent are `tally.requests`.
    public var offered: Int?
    var embedded: Bool
    /// Concurrent requests (and the pool size).
    public var connections: Int
    var engineThreads: Int
    var onLoop: Bool
    var pipeline = false
    /// How the client wrote to sockets (`epoll`, `io_uring`), or nil.
    public var ioBackend: String?
    var warmup: Int
    /// The measured requests and their outcome.
    public var tally: BenchTally
    var elapsedNanos: UInt64
    var latencies: Histogram<UInt64> // ns, successful requests only
    var cpuNanos: UInt64             // whole process (getrusage RUSAGE_SELF)
    var serverCPUNanos: UInt64       // embedded server threads (0 with --url)
    var engineAllocations: UInt64?  // Pocket's engine counter; nil for other clients
    var heapAllocations: UInt64?     // with scripts/malloc-count preloaded
    var userInstructions: UInt64?    // with an InstructionCounter (pocket-bench --count)
    /// Hedges sent, as the client counts them (0 for a client without hedging).
    public var hedgesFired = 0
    /// Hedges whose answer was the one used (0 for a client without hedging).
    public var hedgesWon = 0
    /// Replicas ejected during the run (0 for a client without ejection).
    public var ejections = 0
    /// How the requests were spread over the replicas, for people: nil is
    /// "in turn", by the benchmark (`MeasureSetup.balancing`).
    public var balancing: String?
    /// Requests the servers received during the phase, retries and hedges
    /// included (embedded replicas); nil: unknown.
    public var serverRequests: Int?
    /// What a replica killed during the phase led to (`--kill-replica`), or nil.
    public var failover: BenchFailover?
    /// Versions beside the machine in the JSON (`swift`, and the client's, `MeasureSetup.versions`).
    public var versions: [String: String] = ["swift": MachineInfo.swiftVersion]

    /// Seconds of the measured phase.
    public var elapsedSeconds: Double { Double(elapsedNanos) / 1e9 }
    var successes: Int { tally.requests - tally.errors }
    /// Successful responses per second.
    public var rps: Double { elapsedNanos == 0 ? 0 : Double(successes) / elapsedSeconds }

    /// Latency percentile `p` (0...1) in microseconds from the HDR histogram
    /// (0 without samples).
    public func percentileMicros(_ p: Double) -> Double {
        guard latencies.totalCount > 0 else { return 0 }
        return Double(latencies.valueAtPercentile(p * 100)) / 1e3
    }

    /// The percentiles of the latency curve (HdrHistogram's plot): those the
    /// samples can tell apart from the maximum (p needs 1/(1-p) samples).
    static let curvePercents: [Double] = [0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999]

    /// `[percent, µs]` pairs of the latency curve, empty without samples.
    public var latencyCurve: [(percent: Double, micros: Double)] {
        let n = Double(latencies.totalCount)
        guard n > 0 else { return [] }
        return BenchReport.curvePercents.filter { $0 <= 50 || n >= 1 / (1 - $0 / 100) - 0.5 }.map { p in
            (p, p == 0 ? Double(latencies.min) / 1e3 : percentileMicros(p / 100))
        }
    }

    var maxMicros: Double { latencies.totalCount > 0 ? Double(latencies.max) / 1e3 : 0 }
    var cpuSeconds: Double { Double(cpuNanos) / 1e9 }
    var clientCPUNanos: UInt64 { cpuNanos > serverCPUNanos ? cpuNanos - serverCPUNanos : 0 }

    private func perRequest(_ v: Double) -> Double {
        tally.requests == 0 ? 0 : v / Double(tally.requests)
    }
    /// Process CPU (user + system) per measured request, in µs.
    public var cpuMicrosPerRequest: Double { perRequest(Double(cpuNanos) / 1e3) }
    var clientCPUMicrosPerRequest: Double { perRequest(Double(clientCPUNanos) / 1e3) }
    var engineAllocationsPerRequest: Double? { engineAllocations.map { perRequest(Double($0)) } }
    /// Body bytes per second of the measured phase.
    public var bytesPerSecond: Double { elapsedNanos == 0 ? 0 : Double(tally.bytes) / elapsedSeconds }
    /// Heap allocation calls of the process per measured request (malloc-count preloaded), or nil.
    public var heapAllocationsPerRequest: Double? { heapAllocations.map { perRequest(Double($0)) } }
    /// User-space instructions per measured request (an `InstructionCounter` given), or nil.
    public var instructionsPerRequest: Double? { userInstructions.map { perRequest(Double($0)) } }

    /// One JSON object on one line.
    public func json() -> String {
        var fields: [(String, String)] = [
            ("client", jsonString(client)),
            ("requests", "\(tally.requests)"),
            ("errors", "\(tally.errors)"),
            ("new_connections", tally.connectionUnknown > 0 ? "null" : "\(tally.newConnections)"),
            ("tls_resumed", "\(tally.tlsResumed)"),
            ("bad_status", "\(tally.badStatus)"),
            ("elapsed_s", fixedPoint(elapsedSeconds, 6)),
            ("rps", fixedPoint(rps, 1)),
            ("p50_us", fixedPoint(percentileMicros(0.50), 1)),
            ("p90_us", fixedPoint(percentileMicros(0.90), 1)),
            ("p99_us", fixedPoint(percentileMicros(0.99), 1)),
            ("p999_us", fixedPoint(percentileMicros(0.999), 1)),
            ("p9999_us", fixedPoint(percentileMicros(0.9999), 1)),
            ("max_us", fixedPoint(maxMicros, 1)),
            ("rate", rate.map { fixedPoint($0, 1) } ?? "null"),
            ("offered", offered.map(String.init) ?? "null"),
            ("sent", "\(tally.requests)"),
            ("longest_call_us", rate == nil ? "null" : fixedPoint(Double(tally.longestCallNanos) / 1e3, 1)),
            ("replicas", "\(replicas)"),
            ("hedges_fired", "\(hedgesFired)"),
            ("hedges_won", "\(hedgesWon)"),
            ("ejections", "\(ejections)"),
            ("server_requests", serverRequests.map(String.init) ?? "null"),
            ("cpu_s", fixedPoint(cpuSeconds, 6)),
            ("cpu_us_per_req", fixedPoint(cpuMicrosPerRequest, 3)),
            ("client_cpu_us_per_req", fixedPoint(clientCPUMicrosPerRequest, 3)),
            ("server_cpu_s", fixedPoint(Double(serverCPUNanos) / 1e9, 6)),
            ("engine_allocs_per_req", engineAllocationsPerRequest.map { fixedPoint($0, 3) } ?? "null"),
            ("heap_allocs_per_req", heapAllocationsPerRequest.map { fixedPoint($0, 3) } ?? "null"),
            ("user_instructions_per_req", instructionsPerRequest.map { fixedPoint($0, 1) } ?? "null"),
            ("bytes", "\(tally.bytes)"),
            ("bytes_per_s", fixedPoint(bytesPerSecond, 0)),
            ("connections", "\(connections)"),
            ("engine_threads", "\(engineThreads)"),
            ("on_loop", onLoop ? "true" : "false"),
            ("pipeline", pipeline ? "true" : "false"),
            ("io_backend", ioBackend.map(jsonString) ?? "null"),
            ("warmup", "\(warmup)"),
            ("latency_samples", "\(latencies.totalCount)"),
            ("embedded_server", embedded ? "true" : "false"),
            ("url", jsonString(url)),
            ("peak_rss_kib", peakRSSKiB().map(String.init) ?? "null"),
        ]
        if let scenario { fields.insert(("scenario", jsonString(scenario)), at: 1) }
        if let e = tally.firstError { fields.append(("first_error", jsonString(e))) }
        if let f = failover {
            let ms = { (ns: UInt64?) in ns.map { fixedPoint(Double($0) / 1e6, 3) } ?? "null" }
            fields += [("killed_replica", "\(f.replica)"), ("killed_at_ms", ms(f.killedAtNanos)),
                       ("ejected_after_kill_ms", ms(f.ejectedAfterKillNanos)),
                       ("errors_before_ejection", "\(f.errorsBeforeEjection)"),
                       ("errors_after_ejection", "\(f.errorsAfterEjection)")]
        }
        // Last: what the charts draw and where the run ran (`pocket bench report`).
        fields.append(("latency_percentiles", "[" + latencyCurve.map { "[\(fixedPoint($0.percent, 3)),\(fixedPoint($0.micros, 1))]" }
            .joined(separator: ",") + "]"))
        let m = MachineInfo.current
        fields.append(("machine", "{\"cpus\":\(m.cpus.map(String.init) ?? "null"),\"cpu_model\":"
            + "\(m.cpuModel.map(jsonString) ?? "null"),\"kernel\":\(m.kernel.map(jsonString) ?? "null")}"))
        fields.append(("date", jsonString(MachineInfo.today)))
        fields.append(("versions", "{" + versions.sorted { $0.key < $1.key }
            .map { "\(jsonString($0.key)):\(jsonString($0.value))" }.joined(separator: ",") + "}"))
        fields.append(("command", jsonString(MachineInfo.commandLine)))
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// A few lines for people.
    public func text() -> String {
        var lines: [String] = []
        lines.append("\(scenario.map { "[\($0)] " } ?? "")\(client)  \(url)"
            + (replicas > 1 ? " and \(replicas - 1) more replica\(replicas == 2 ? "" : "s"), \(balancing ?? "in turn")" : "")
            + (embedded ? "  (embedded server\(replicas > 1 ? "s" : ""))" : ""))
        lines.append("  connections \(connections), engine threads \(engineThreads), "
            + "executor \(onLoop ? "engine loop" : "global"), warmup \(warmup) requests"
            + (ioBackend.map { ", I/O \($0)" } ?? "")
            + (pipeline ? ", request path engaged (middleware, retry policy, events)" : ""))
        lines.append("  requests    \(tally.requests) in \(fixedPoint(elapsedSeconds, 3)) s"
            + "  (errors \(tally.errors), non-2xx/3xx \(tally.badStatus))")
        lines.append("  requests/s  \(fixedPoint(rps, 0))")
        if let rate, let offered {
            let share = offered == 0 ? 0 : 100 * Double(tally.requests) / Double(offered)
            lines.append("  fixed rate  \(fixedPoint(rate, 0))/s: sent \(tally.requests) of \(offered) offered "
                + "(\(fixedPoint(share, 1))%); latency from each request's due time")
            lines.append("  longest     \(fixedPoint(Double(tally.longestCallNanos) / 1e6, 2)) ms, "
                + "a call from when it was made to its end, answered or failed")
        }
        lines.append("  latency µs  p50 \(fixedPoint(percentileMicros(0.50), 1))  p90 \(fixedPoint(percentileMicros(0.90), 1))"
            + "  p99 \(fixedPoint(percentileMicros(0.99), 1))  p99.9 \(fixedPoint(percentileMicros(0.999), 1))"
            + "  p99.99 \(fixedPoint(percentileMicros(0.9999), 1))  max \(fixedPoint(maxMicros, 1))")
        if replicas > 1 || rate != nil || hedgesFired + ejections > 0 {
            lines.append("  hedges      \(hedgesFired) fired, \(hedgesWon) won; ejections \(ejections)")
        }
        if let serverRequests {
            let ratio = offered.map { $0 == 0 ? "" : " (\(fixedPoint(Double(serverRequests) / Double($0), 3)) x offered)" } ?? ""
            lines.append("  servers     \(serverRequests) requests received\(ratio)")
        }
        if let f = failover {
            if let killed = f.killedAtNanos {
                let ejected = f.ejectedAfterKillNanos.map { "ejected \(fixedPoint(Double($0) / 1e6, 1)) ms later" } ?? "not ejected"
                lines.append("  failover    replica \(f.replica) killed at \(fixedPoint(Double(killed) / 1e9, 3)) s, \(ejected); "
                    + "failed requests \(f.errorsBeforeEjection) before the ejection, \(f.errorsAfterEjection) after")
            } else {
                lines.append("  failover    replica \(f.replica) not killed: the phase ended first")
            }
        }
        var cpu = "  cpu         \(fixedPoint(cpuSeconds, 3)) s, \(fixedPoint(cpuMicrosPerRequest, 2)) µs/request (process)"
        if embedded {
            cpu += "; client only \(fixedPoint(clientCPUMicrosPerRequest, 2)) µs/request"
        }
        lines.append(cpu)
        var allocs = "  allocs      engine \(engineAllocationsPerRequest.map { fixedPoint($0, 2) } ?? "-")/request"
        if let h = heapAllocationsPerRequest {
            allocs += ", process heap \(fixedPoint(h, 2))/request (malloc-count)"
        } else {
            allocs += " (preload scripts/malloc-count for the process heap count)"
        }
        lines.append(allocs)
        lines.append("  bytes       \(tally.bytes) (bodies), \(fixedPoint(bytesPerSecond / 1e6, 1)) MB/s")
        return lines.joined(separator: "\n")
    }
}

/// Fixed-point formatting without Foundation's String(format:).
public func fixedPoint(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return "0" }
    if decimals == 0 { return String(Int64(v.rounded())) }
    var scale: UInt64 = 1
    for _ in 0..<decimals { scale *= 10 }
    let scaled = UInt64((abs(v) * Double(scale)).rounded())
    let whole = scaled / scale
    var frac = String(scaled % scale)
    while frac.count < decimals { frac = "0" + frac }
    return (v < 0 && scaled != 0 ? "-" : "") + "\(whole).\(frac)"
}

/// `s` as a JSON string literal, quotes included.
public func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 {
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out + "\""
}
