import Pocket
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--soak K`: the measured requests in K equal rounds, with the process's
/// resident memory and open file descriptors sampled before the first and
/// after every round, so a leak shows as a trend from start to end (issue
/// #10's soak: 1,000,000 keep-alive requests, 100,000 with `--close`).
struct SoakSample {
    var requests: Int
    var errors: Int
    var rssKiB: Int
    var openFDs: Int
    var seconds: Double
}

/// VmRSS of this process in KiB (from /proc/self/status), or -1.
func residentKiB() -> Int {
    guard let f = fopen("/proc/self/status", "r") else { return -1 }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), f) != nil {
        let s = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if s.hasPrefix("VmRSS:") {
            return Int(s.dropFirst(6).filter { $0.isNumber }) ?? -1
        }
    }
    return -1
}

/// Entries of /proc/self/fd (the directory's own descriptor excluded), or -1.
func openFileDescriptors() -> Int {
    guard let d = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(d) }
    var n = 0
    while let e = readdir(d) {
        let first = withUnsafeBytes(of: e.pointee.d_name) { $0[0] }
        if first != UInt8(ascii: ".") { n += 1 }
    }
    return n - 1
}

/// Runs the rounds and prints one line per sample, then the drift.
func runSoak(client: PocketClient, request: Request, rounds: Int, total: Int, options: Options,
             uploadBytes: Int) async -> Tally {
    var samples: [SoakSample] = []
    var tally = Tally()
    let t0 = monotonicNanos()
    func sample() {
        samples.append(SoakSample(requests: tally.requests, errors: tally.errors, rssKiB: residentKiB(),
                                  openFDs: openFileDescriptors(),
                                  seconds: Double(monotonicNanos() &- t0) / 1e9))
        let s = samples[samples.count - 1]
        print("soak  requests \(s.requests)  errors \(s.errors)  rss_kib \(s.rssKiB)  open_fds \(s.openFDs)  t \(fmt(s.seconds, 1)) s")
        fflush(nil) // every stream: lines show up while a long soak runs
    }
    sample()
    let perRound = max(1, total / rounds)
    for _ in 0..<rounds {
        let phase = Phase(limit: perRound, deadline: .max, sampleCapacity: 0)
        let t = await runPhase(client: client, request: request, phase: phase, connections: options.connections,
                               onLoop: options.onLoop, transfer: options.transfer, uploadBytes: uploadBytes)
        tally.add(t)
        sample()
    }
    if let first = samples.first, let last = samples.last, samples.count > 2 {
        // Growth after the first round (the first round warms pools and caches).
        let warm = samples[1]
        print("soak  drift: rss \(last.rssKiB - warm.rssKiB) KiB, open fds \(last.openFDs - warm.openFDs) after round 1;"
              + " rss \(last.rssKiB - first.rssKiB) KiB, fds \(last.openFDs - first.openFDs) from the start;"
              + " \(tally.requests) requests, \(tally.errors) errors, \(fmt(Double(tally.requests) / max(last.seconds, 1e-9), 0)) req/s")
    }
    return tally
}
