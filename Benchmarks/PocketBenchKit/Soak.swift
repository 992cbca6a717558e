#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--soak K`: the measured requests in K equal rounds, with the process's
/// resident memory and open file descriptors printed (to stderr, so `--json`
/// stays one object) before round 1 and after every round, so a leak
/// shows as a trend from start to end. The hardening soak: 1,000,000 keep-alive
/// requests, 100,000 with `--close`. Returns the rounds' summed tally; the
/// report then has no latencies.
func soak<C: BenchClient>(_ client: C, rounds: Int, options: BenchOptions, setup: MeasureSetup) async -> BenchTally {
    var tally = BenchTally()
    let t0 = monotonicNanos()
    var samples: [(rss: Int, fds: Int)] = []
    func sample() {
        let s = (rss: procStatusKiB("VmRSS:") ?? -1, fds: openFileDescriptors())
        samples.append(s)
        let seconds = Double(monotonicNanos() &- t0) / 1e9
        eprint("soak  requests \(tally.requests)  errors \(tally.errors)  rss_kib \(s.rss)  open_fds \(s.fds)  t \(fixedPoint(seconds, 1)) s")
    }
    sample()
    let perRound = max(1, options.requests / rounds)
    for _ in 0..<rounds {
        let phase = BenchPhase(limit: perRound, recordsLatencies: false)
        tally.add(await runPhase(client, phase: phase, connections: options.connections, executor: setup.executor))
        sample()
    }
    if samples.count > 2, let first = samples.first, let last = samples.last {
        // After round 1 pools, caches and allocator arenas are warm.
        let warm = samples[1]
        eprint("soak  drift: rss \(last.rss - warm.rss) KiB, open fds \(last.fds - warm.fds) after round 1;"
               + " rss \(last.rss - first.rss) KiB, fds \(last.fds - first.fds) from the start;"
               + " \(tally.requests) requests, \(tally.errors) errors")
    }
    return tally
}

/// Entries of /proc/self/fd, without the directory's own descriptor; -1 if unreadable.
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
