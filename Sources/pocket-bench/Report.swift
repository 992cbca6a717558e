/// The results of the measured phase.
struct Report {
    var url: String
    var embedded: Bool
    var connections: Int
    var engineThreads: Int
    var onLoop: Bool
    var warmup: Int
    var tally: Tally
    var elapsedNanos: UInt64
    var latencies: [UInt64]          // sorted, successful requests only
    var cpuNanos: UInt64             // whole process (getrusage RUSAGE_SELF)
    var serverCPUNanos: UInt64       // embedded server threads (0 with --url)
    var engineAllocations: UInt64
    var heapAllocations: UInt64?     // with scripts/malloc-count preloaded

    var elapsedSeconds: Double { Double(elapsedNanos) / 1e9 }
    var successes: Int { tally.requests - tally.errors }
    var rps: Double { elapsedNanos == 0 ? 0 : Double(successes) / elapsedSeconds }

    /// Nearest-rank percentile in microseconds (0 without samples).
    func percentileMicros(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        var rank = Int((p * Double(latencies.count)).rounded(.up)) - 1
        rank = min(max(rank, 0), latencies.count - 1)
        return Double(latencies[rank]) / 1e3
    }

    var maxMicros: Double { latencies.last.map { Double($0) / 1e3 } ?? 0 }
    var cpuSeconds: Double { Double(cpuNanos) / 1e9 }
    var clientCPUNanos: UInt64 { cpuNanos > serverCPUNanos ? cpuNanos - serverCPUNanos : 0 }

    private func perRequest(_ v: Double) -> Double {
        tally.requests == 0 ? 0 : v / Double(tally.requests)
    }
    var cpuMicrosPerRequest: Double { perRequest(Double(cpuNanos) / 1e3) }
    var clientCPUMicrosPerRequest: Double { perRequest(Double(clientCPUNanos) / 1e3) }
    var engineAllocationsPerRequest: Double { perRequest(Double(engineAllocations)) }
    var heapAllocationsPerRequest: Double? { heapAllocations.map { perRequest(Double($0)) } }

    func json() -> String {
        var fields: [(String, String)] = [
            ("requests", "\(tally.requests)"),
            ("errors", "\(tally.errors)"),
            ("new_connections", "\(tally.newConnections)"),
            ("tls_resumed", "\(tally.tlsResumed)"),
            ("bad_status", "\(tally.badStatus)"),
            ("elapsed_s", fmt(elapsedSeconds, 6)),
            ("rps", fmt(rps, 1)),
            ("p50_us", fmt(percentileMicros(0.50), 1)),
            ("p90_us", fmt(percentileMicros(0.90), 1)),
            ("p99_us", fmt(percentileMicros(0.99), 1)),
            ("p999_us", fmt(percentileMicros(0.999), 1)),
            ("max_us", fmt(maxMicros, 1)),
            ("cpu_s", fmt(cpuSeconds, 6)),
            ("cpu_us_per_req", fmt(cpuMicrosPerRequest, 3)),
            ("client_cpu_us_per_req", fmt(clientCPUMicrosPerRequest, 3)),
            ("server_cpu_s", fmt(Double(serverCPUNanos) / 1e9, 6)),
            ("engine_allocs_per_req", fmt(engineAllocationsPerRequest, 3)),
            ("heap_allocs_per_req", heapAllocationsPerRequest.map { fmt($0, 3) } ?? "null"),
            ("bytes", "\(tally.bytes)"),
            ("connections", "\(connections)"),
            ("engine_threads", "\(engineThreads)"),
            ("on_loop", onLoop ? "true" : "false"),
            ("warmup", "\(warmup)"),
            ("latency_samples", "\(latencies.count)"),
            ("embedded_server", embedded ? "true" : "false"),
            ("url", jsonString(url)),
            ("peak_rss_kib", peakRSSKiB().map(String.init) ?? "null"),
        ]
        if let e = tally.firstError { fields.append(("first_error", jsonString(e))) }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    func text() -> String {
        var lines: [String] = []
        lines.append("pocket-bench  \(url)\(embedded ? "  (embedded server)" : "")")
        lines.append("  connections \(connections), engine threads \(engineThreads), "
            + "executor \(onLoop ? "engine loop" : "global"), warmup \(warmup) requests")
        lines.append("  requests    \(tally.requests) in \(fmt(elapsedSeconds, 3)) s"
            + "  (errors \(tally.errors), non-2xx/3xx \(tally.badStatus))")
        lines.append("  requests/s  \(fmt(rps, 0))")
        lines.append("  latency µs  p50 \(fmt(percentileMicros(0.50), 1))  p90 \(fmt(percentileMicros(0.90), 1))"
            + "  p99 \(fmt(percentileMicros(0.99), 1))  p99.9 \(fmt(percentileMicros(0.999), 1))  max \(fmt(maxMicros, 1))")
        var cpu = "  cpu         \(fmt(cpuSeconds, 3)) s, \(fmt(cpuMicrosPerRequest, 2)) µs/request (process)"
        if embedded {
            cpu += "; client only \(fmt(clientCPUMicrosPerRequest, 2)) µs/request"
        }
        lines.append(cpu)
        var allocs = "  allocs      engine \(fmt(engineAllocationsPerRequest, 2))/request"
        if let h = heapAllocationsPerRequest {
            allocs += ", process heap \(fmt(h, 2))/request (malloc-count)"
        } else {
            allocs += " (preload scripts/malloc-count for the process heap count)"
        }
        lines.append(allocs)
        lines.append("  bytes       \(tally.bytes) (response bodies)")
        return lines.joined(separator: "\n")
    }
}

/// Fixed-point formatting without Foundation's String(format:).
func fmt(_ v: Double, _ decimals: Int) -> String {
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

func jsonString(_ s: String) -> String {
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
