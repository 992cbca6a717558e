#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Monotonic clock in nanoseconds (no allocation, one vDSO call).
@inline(__always)
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// User + system CPU time of the whole process, in nanoseconds
/// (getrusage(RUSAGE_SELF)).
public func processCPUNanos() -> UInt64 {
    var ru = rusage()
    _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &ru)
    func ns(_ tv: timeval) -> UInt64 {
        UInt64(tv.tv_sec) &* 1_000_000_000 &+ UInt64(tv.tv_usec) &* 1_000
    }
    return ns(ru.ru_utime) &+ ns(ru.ru_stime)
}

/// The process-wide allocation counter of `scripts/malloc-count`, when that
/// library is preloaded (LD_PRELOAD): `uint64_t malloc_count_get(void)`.
struct MallocCounter {
    private typealias Getter = @convention(c) () -> UInt64
    private let getter: Getter?

    init() {
        // dlopen(NULL) gives the global scope, which includes preloaded
        // libraries (the same lookup as dlsym(RTLD_DEFAULT, ...)).
        if let handle = dlopen(nil, RTLD_NOW), let sym = dlsym(handle, "malloc_count_get") {
            getter = unsafeBitCast(sym, to: Getter.self)
        } else {
            getter = nil
        }
    }

    var isAvailable: Bool { getter != nil }

    /// Allocation calls so far, or nil without the library.
    func count() -> UInt64? { getter?() }
}

/// Writes `message` and a newline to stderr (unbuffered, straight to fd 2).
public func eprint(_ message: String) {
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

/// True when `scripts/malloc-count` is preloaded, so reports carry the
/// process's heap allocation count.
public var heapCounterPreloaded: Bool { MallocCounter().isAvailable }
