import Pocket
import PocketBenchKit
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one benchmark request does with its body.
enum Transfer: Sendable {
    /// `client.send`: the body collected in memory (the default).
    case memory
    /// `client.stream`: chunks read and dropped, like writing to /dev/null.
    case discard
    /// `client.download(to:)`: the engine writes the body to this file.
    case file(String)
    /// `client.send(_:writingBodyInto:)`: the body copied once into the
    /// caller's storage (an array here; PocketNIO's `ByteBuffer` path).
    case sink

    /// `memory`, `discard`, `sink` or `file:PATH` (validated by `BenchOptions`).
    init(_ s: String) {
        switch s {
        case "discard": self = .discard
        case "sink": self = .sink
        case _ where s.hasPrefix("file:"): self = .file(String(s.dropFirst(5)))
        default: self = .memory
        }
    }
}

/// Pocket as a benchmark client: one `PocketClient`, one request (to the
/// replica `targets` gives), sent the way `transfer` says. `bytes` is the
/// request body's size for uploads (`uploadBytes` > 0), else the response body's.
struct PocketBenchClient: BenchClient {
    let client: PocketClient
    let targets: BenchTargets
    let transfer: Transfer
    let uploadBytes: Int
    /// Each request's task deadline (`--deadline`), or nil.
    var deadline: Duration? = nil
    /// Told of each failed request and when it started (`--kill-replica`), or nil.
    var failover: Failover? = nil

    func perform() async throws -> BenchOutcome {
        guard let failover else { return try await exchangeByDeadline() }
        let start = monotonicNanos()
        do {
            return try await exchangeByDeadline()
        } catch {
            failover.failed(startedAt: start)
            throw error
        }
    }

    /// One request, within `deadline` when there is one.
    @inline(__always)
    private func exchangeByDeadline() async throws -> BenchOutcome {
        guard let deadline else { return try await exchange() }
        return try await PocketDeadline.withDeadline(in: deadline) { try await exchange() }
    }

    /// One request, sent the way `transfer` says (on the caller's
    /// executor, as a service's own code under a deadline calls the client).
    @inline(__always)
    nonisolated(nonsending) private func exchange() async throws -> BenchOutcome {
        let request = targets.next()
        switch transfer {
        case .memory:
            let r = try await client.send(request)
            return BenchOutcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : r.body.count,
                           reused: r.timings.reusedConnection, tlsResumed: r.timings.tlsResumed)
        case .discard:
            let r = try await client.stream(request)
            var n = 0
            for try await chunk in r.body { n += chunk.count }
            let timings = r.body.timings // known once the body has ended
            return BenchOutcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : n,
                           reused: timings?.reusedConnection, tlsResumed: timings?.tlsResumed ?? false)
        case .sink:
            let (r, sink) = try await client.send(request) { start in BytesSink(capacity: start.contentLength ?? 0) }
            return BenchOutcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : sink.bytes.count,
                           reused: r.timings.reusedConnection, tlsResumed: r.timings.tlsResumed)
        case .file(let path):
            let r = try await client.download(request, to: URL(filePath: path))
            return BenchOutcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : r.fileSize + r.body.count,
                           reused: r.timings.reusedConnection, tlsResumed: r.timings.tlsResumed)
        }
    }
}

/// The body in an array, written once by the loop thread and read by the
/// sending task after `send` returns (the send's continuation orders them).
final class BytesSink: PocketResponseBodySink, @unchecked Sendable {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(min(capacity, 64 << 20)) }

    func write(_ chunk: UnsafeRawBufferPointer) -> PocketBodyWriteAnswer {
        bytes.append(contentsOf: chunk)
        return .proceed
    }
}
