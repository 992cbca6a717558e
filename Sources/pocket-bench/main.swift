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

let options = BenchOptions.parseOrExit("pocket-bench")
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
measurement.finish("pocket-bench", json: options.json)
