// pocket-bench: keep-alive HTTP/1.1 load through Pocket's async API (the
// scripts' benchmark client; `pocket bench` runs the same code). See
// PocketBenchmark (Sources/PocketBench) and docs/BENCHMARKS.md.
import PocketBench
import PocketBenchKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

let options: BenchOptions
do {
    options = try BenchOptions.parse(CommandLine.arguments.dropFirst())
} catch {
    eprint("pocket-bench: \(error)")
    eprint(BenchOptions.usage)
    exit(2)
}
if options.url != nil && options.serverCPU != nil { eprint("pocket-bench: --server-cpu ignored with --url") }

let measurement: Measurement
do {
    measurement = try await PocketBenchmark.run(options)
} catch let error as PocketBenchmark.Failure {
    eprint("pocket-bench: \(error.description)")
    exit(error.exitCode)
} catch {
    eprint("pocket-bench: \(error)")
    exit(1)
}
print(options.json ? measurement.report.json() : measurement.report.text())
if let e = measurement.firstError { eprint("pocket-bench: first error: \(e)") }
if measurement.allFailed {
    eprint("pocket-bench: every request failed")
    exit(1)
}
