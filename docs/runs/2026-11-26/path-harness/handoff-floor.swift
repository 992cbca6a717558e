// The floor of an async Swift client with its own I/O thread: N tasks (the
// first argument, 64 by default) on the global executor, each awaiting a
// continuation that one loop thread resumes in batches (no I/O, no parsing,
// no allocation): process CPU per round trip. Built and run by run.sh.
import Glibc
import Synchronization

final class Loop: @unchecked Sendable {
    var mutex = pthread_mutex_t()
    var cond = pthread_cond_t()
    var queue: [UnsafeContinuation<Int, Never>] = []
    var sleeping = false
    init() { pthread_mutex_init(&mutex, nil); pthread_cond_init(&cond, nil); queue.reserveCapacity(1024) }
    func submit(_ c: UnsafeContinuation<Int, Never>) {
        pthread_mutex_lock(&mutex)
        queue.append(c)
        let wake = sleeping
        pthread_mutex_unlock(&mutex)
        if wake { pthread_cond_signal(&cond) }
    }
    func run() {
        var batch: [UnsafeContinuation<Int, Never>] = []
        batch.reserveCapacity(1024)
        while true {
            pthread_mutex_lock(&mutex)
            while queue.isEmpty { sleeping = true; pthread_cond_wait(&cond, &mutex) }
            sleeping = false
            swap(&batch, &queue)
            pthread_mutex_unlock(&mutex)
            for c in batch { c.resume(returning: 200) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
func cpuNanos() -> UInt64 { var ts = timespec(); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec) }

nonisolated(unsafe) let loop = Loop()
startLoop(loop)
let tasks = Int(CommandLine.arguments.dropFirst().first ?? "64")!
let per = 200_000 / tasks * 10
for _ in 0..<4 {
    let t0 = cpuNanos()
    await withTaskGroup(of: Int.self) { group in
        for _ in 0..<tasks {
            group.addTask { @Sendable () async -> Int in
                var sum = 0
                for _ in 0..<per { sum &+= await withUnsafeContinuation { loop.submit($0) } }
                return sum
            }
        }
        for await _ in group {}
    }
    let t1 = cpuNanos()
    let total = Double(per) * Double(tasks)
    let us: Double = Double(t1 - t0) / total / 1000.0
    print(tasks, us, "µs CPU per round trip")
}
