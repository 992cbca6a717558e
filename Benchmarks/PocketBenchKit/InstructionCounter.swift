import CPocketBenchCount
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// User-space instructions retired in a window of this process (`pocket-bench
/// --count`), from one of two sources:
///
/// - `perf`: a hardware counter per thread (perf_event_open, exclude_kernel),
///   the embedded server's threads (`pkbs-loop`) left out;
/// - `callgrind`: the process runs under `valgrind --tool=callgrind
///   --instr-atstart=no`, with `POCKET_BENCH_CALLGRIND_OUT` naming its
///   `--callgrind-out-file`; each window is one dump, `PATH.N`, whose
///   `totals:` line is the count (every thread of the process).
public final class InstructionCounter: @unchecked Sendable {
    // Invariant: start and stop are called in turn by one task (measure()'s).

    /// Where counts come from.
    public enum Source: String, Sendable {
        case perf, callgrind
    }

    /// The source in use.
    public let source: Source
    private let dumpPath: String?
    private var dumps = 0
    private var perf = pkbc_perf()
    private var perfTotal: UInt64?
    /// Why the last window has no count.
    public private(set) var failure: String?

    /// The embedded server's thread name, left out of perf counts.
    static let serverThread = "pkbs-loop"

    private init(source: Source, dumpPath: String?) {
        self.source = source
        self.dumpPath = dumpPath
    }

    /// A counter under callgrind when this process runs under valgrind, else
    /// a perf counter when the kernel grants one; otherwise the reason none
    /// can count.
    public static func make() -> Result<InstructionCounter, CountUnavailable> {
        if pkbc_on_valgrind() != 0 {
            guard let out = getenv("POCKET_BENCH_CALLGRIND_OUT").map({ String(cString: $0) }), !out.isEmpty else {
                return .failure(.init(reason: "under valgrind without POCKET_BENCH_CALLGRIND_OUT (its --callgrind-out-file)"))
            }
            return .success(InstructionCounter(source: .callgrind, dumpPath: out))
        }
        var probe = pkbc_perf()
        let rc = pkbc_perf_start(&probe, serverThread)
        guard rc == 0 else {
            let why = String(cString: strerror(-rc))
            return .failure(.init(reason: "perf_event_open (user-space instructions) refused: \(why)"
                + (rc == -ENOENT ? " (no hardware counters: a virtual machine without a PMU)" : "")
                + (rc == -EACCES || rc == -EPERM ? " (see /proc/sys/kernel/perf_event_paranoid)" : "")))
        }
        var ignored: UInt64 = 0
        _ = pkbc_perf_stop(&probe, &ignored)
        return .success(InstructionCounter(source: .perf, dumpPath: nil))
    }

    /// Starts a window.
    public func start() {
        failure = nil
        perfTotal = nil
        switch source {
        case .callgrind:
            pkbc_callgrind_start()
        case .perf:
            let rc = pkbc_perf_start(&perf, Self.serverThread)
            if rc != 0 { failure = "perf_event_open: \(String(cString: strerror(-rc)))" }
        }
    }

    /// Ends the window `label` (without allocating: `label` fits in a small string).
    public func stop(label: String) {
        switch source {
        case .callgrind:
            pkbc_callgrind_stop(label)
            dumps += 1
        case .perf:
            guard failure == nil else { return }
            var total: UInt64 = 0
            let rc = pkbc_perf_stop(&perf, &total)
            if rc == 0 {
                perfTotal = total
            } else {
                failure = "reading the perf counters: \(String(cString: strerror(-rc)))"
            }
        }
    }

    /// The count of the window `stop` ended, or nil (`failure` says why).
    /// Allocates (reads callgrind's dump): call it after reading the heap counter.
    public func count() -> UInt64? {
        guard failure == nil else { return nil }
        switch source {
        case .callgrind:
            let path = "\(dumpPath!).\(dumps)"
            guard let total = Self.callgrindTotal(path) else {
                failure = "no totals: line in callgrind dump \(path)"
                return nil
            }
            return total
        case .perf:
            return perfTotal
        }
    }

    /// The `totals:` (or `summary:`) figure of a callgrind dump: its first event, Ir.
    static func callgrindTotal(_ path: String) -> UInt64? {
        guard let text = readWholeFile(path) else { return nil }
        for line in text.split(separator: "\n").reversed() {
            for key in ["totals:", "summary:"] where line.hasPrefix(key) {
                return line.dropFirst(key.count).split(separator: " ").first.flatMap { UInt64($0) }
            }
        }
        return nil
    }
}

/// Why instructions cannot be counted here.
public struct CountUnavailable: Error, CustomStringConvertible {
    /// In a sentence.
    public var reason: String
    public var description: String { reason }
}

/// The bytes of a file as UTF-8 text, or nil when it cannot be read.
func readWholeFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { return nil }
        if n == 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    return String(decoding: bytes, as: UTF8.self)
}
