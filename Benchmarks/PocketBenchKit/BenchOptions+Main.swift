#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension BenchOptions {
    /// The command line of `tool` (pocket-bench, ahc-bench, urlsession-bench),
    /// or exit 2 with the error and `usage` on stderr. `requireURL`: the peers
    /// have no embedded server.
    public static func parseOrExit(_ tool: String, usage: String = BenchOptions.usage,
                                   requireURL: Bool = false) -> BenchOptions {
        do {
            let options = try BenchOptions.parse(CommandLine.arguments.dropFirst(), usage: usage,
                                                 countAllowed: tool == "pocket-bench")
            if requireURL && options.url == nil { throw ParseError.message("--url URL is required") }
            return options
        } catch {
            eprint("\(tool): \(error)\n\(usage)")
            exit(2)
        }
    }
}

extension BenchMeasurement {
    /// Prints the report (JSON or text) and the first error, and exits 1 when
    /// every request failed: how every benchmark client ends.
    public func finish(_ tool: String, json: Bool) {
        print(json ? report.json() : report.text())
        if let e = firstError { eprint("\(tool): first error: \(e)") }
        if allFailed {
            eprint("\(tool): every request failed")
            exit(1)
        }
    }
}
