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

/// Unbuffered writes to a file descriptor (stdout, stderr, a -D file): every
/// byte is out when `write` returns, so the order of the body, -w and the
/// error line is the order of the calls.
struct Output: Sendable {
    let fd: Int32

    static let stdout = Output(fd: 1)
    static let stderr = Output(fd: 2)

    /// Writes all of `bytes`; throws `localWrite` (23) when the descriptor
    /// refuses them (a full disk, a closed pipe: SIGPIPE is ignored).
    func write<C: Collection>(_ bytes: C) throws(CLIFailure) where C.Element == UInt8 {
        let ok: Bool = bytes.withContiguousStorageIfAvailable { writeAll($0) } ?? Array(bytes).withUnsafeBufferPointer { writeAll($0) }
        if !ok {
            throw CLIFailure(.localWrite, "cannot write output: \(String(cString: strerror(errno)))")
        }
    }

    func write(_ text: String) throws(CLIFailure) { try write(Array(text.utf8)) }

    private func writeAll(_ buf: UnsafeBufferPointer<UInt8>) -> Bool {
        var off = 0
        while off < buf.count {
            let n = Glibc.write(fd, buf.baseAddress! + off, buf.count - off)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    /// Writes to stderr, ignoring failures (there is nowhere to report them).
    static func diagnostic(_ line: String) {
        try? Output.stderr.write(line)
    }

    var isTerminal: Bool { isatty(fd) == 1 }
}

/// A file opened for writing (created, and truncated unless told not to),
/// for -D, an error body with -o, or a device given to -o.
struct OutputFile {
    let output: Output

    init(path: String, truncate: Bool = true) throws(CLIFailure) {
        if path == "-" {
            output = .stdout
            return
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0o644)
        guard fd >= 0 else {
            throw CLIFailure(.localWrite, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        output = Output(fd: fd)
    }

    func close() { if output.fd > 2 { _ = Glibc.close(output.fd) } }
}
