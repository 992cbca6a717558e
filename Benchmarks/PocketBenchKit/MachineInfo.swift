#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a report says about where a run ran: online CPUs, the CPU model
/// (/proc/cpuinfo) and the kernel release (uname), read once.
public enum MachineInfo {
    /// This machine.
    public static let current = BenchRun.Machine(cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), cpuModel: cpuModel(),
                                                 kernel: kernelRelease())

    /// The Swift compiler this was built with (`"6.3"`): its release, not the patch.
    public static var swiftVersion: String {
        #if compiler(>=6.4)
        return ">=6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }

    /// Today's date in UTC, `YYYY-MM-DD`.
    public static var today: String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
    }

    /// The process's command line, words with spaces or quotes in single quotes.
    public static var commandLine: String {
        CommandLine.arguments.enumerated().map { i, a in
            let word = i == 0 ? String(a.split(separator: "/").last ?? Substring(a)) : a
            let plain = !word.isEmpty && word.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=,@%+".contains($0) }
            return plain ? word : "'" + word.replacingAll("'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }

    static func cpuModel() -> String? {
        guard let line = procLine("/proc/cpuinfo", "model name"), let colon = line.firstIndex(of: ":") else { return nil }
        let model = line[line.index(after: colon)...].trimmingWhitespace
        return model.isEmpty ? nil : model
    }

    static func kernelRelease() -> String? {
        var u = utsname()
        guard uname(&u) == 0 else { return nil }
        return withUnsafeBytes(of: &u.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

extension StringProtocol {
    var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
