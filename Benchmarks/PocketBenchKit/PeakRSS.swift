#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// This process's peak resident set size in KiB (`VmHWM` of
/// /proc/self/status), or nil where there is no /proc. Read from inside the
/// process because a parent's `ru_maxrss` for a child started with
/// posix_spawn (vfork) also counts the parent's size at the spawn.
public func peakRSSKiB() -> Int? { procStatusKiB("VmHWM:") }

/// A KiB figure of /proc/self/status (`"VmRSS:"`, `"VmHWM:"`), or nil.
func procStatusKiB(_ field: String) -> Int? {
    procLine("/proc/self/status", field).flatMap { Int($0.dropFirst(field.utf8.count).filter { $0.isNumber }) }
}

/// The first line of a /proc file that starts with `prefix` (`"VmHWM:"`,
/// `"model name"`), or nil.
func procLine(_ path: String, _ prefix: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), f) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix(prefix) { return text }
    }
    return nil
}
