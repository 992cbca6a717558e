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

    /// `memory`, `discard` or `file:PATH` (validated by `BenchOptions`).
    init(_ s: String) {
        switch s {
        case "discard": self = .discard
        case _ where s.hasPrefix("file:"): self = .file(String(s.dropFirst(5)))
        default: self = .memory
        }
    }
}

/// Pocket as a benchmark client: one `PocketClient`, one request, sent the
/// way `transfer` says. `bytes` is the request body's size for uploads
/// (`uploadBytes` > 0), else the response body's.
struct PocketBenchClient: BenchClient {
    let client: PocketClient
    let request: PocketRequest
    let transfer: Transfer
    let uploadBytes: Int

    func perform() async throws -> Outcome {
        switch transfer {
        case .memory:
            let r = try await client.send(request)
            return Outcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : r.body.count,
                           reused: r.timings.reusedConnection, tlsResumed: r.timings.tlsResumed)
        case .discard:
            let r = try await client.stream(request)
            var n = 0
            for try await chunk in r.body { n += chunk.count }
            let timings = r.body.timings // known once the body has ended
            return Outcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : n,
                           reused: timings?.reusedConnection, tlsResumed: timings?.tlsResumed ?? false)
        case .file(let path):
            let r = try await client.download(request, to: URL(filePath: path))
            return Outcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : r.fileSize + r.body.count,
                           reused: r.timings.reusedConnection, tlsResumed: r.timings.tlsResumed)
        }
    }
}
