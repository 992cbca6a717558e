// pocket-bench: keep-alive HTTP/1.1 load through Pocket's async API (the
// scripts' benchmark client; `pocket bench` runs the same code). See
// PocketBenchmark (Benchmarks/PocketBench) and docs/BENCHMARKS.md.
//
// The top level is synchronous: the work runs in a detached task while the
// main thread waits, so no `dispatch_main` runs. Its final sigsuspend on a
// read-only signal mask is what valgrind 3.19 cannot run (callgrind counts
// `--count`'s instructions where the kernel has no hardware counter).
import Dispatch
import PocketBench
import PocketBenchKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The exit status, written by the task before it signals `done`.
final class ExitStatus: @unchecked Sendable {
    // Invariant: written once before `done.signal()`, read after `done.wait()`.
    var value: Int32 = 0
    let done = DispatchSemaphore(value: 0)
}

let options = BenchOptions.parseOrExit("pocket-bench")
if let backend = options.integrations { PocketBenchmark.extraMiddleware = Integrations.bootstrap(backend) }
let status = ExitStatus()
Task.detached {
    defer { status.done.signal() }
    if options.count {
        status.value = await PocketCount.main(options)
        return
    }
    if options.url != nil && options.serverCPU != nil { eprint("pocket-bench: --server-cpu ignored with --url") }
    let measurement: BenchMeasurement
    do {
        measurement = try await PocketBenchmark.run(options)
    } catch let error as PocketBenchmark.Failure {
        eprint("pocket-bench: \(error.description)")
        status.value = error.exitCode
        return
    } catch {
        eprint("pocket-bench: \(error)")
        status.value = 1
        return
    }
    measurement.finish("pocket-bench", json: options.json)
}
status.done.wait()
exit(status.value)
