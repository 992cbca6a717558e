import Pocket
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

    static func parse(_ s: String) -> Transfer? {
        switch s {
        case "memory": return .memory
        case "discard": return .discard
        default:
            guard s.hasPrefix("file:"), s.count > 5 else { return nil }
            return .file(String(s.dropFirst(5)))
        }
    }
}

/// The outcome of one request as the tally needs it.
struct Outcome {
    var status: Int
    var bytes: Int
    var reused: Bool
    var tlsResumed: Bool
}

/// Runs one request the way `transfer` says. `bytes` is the request body's
/// size for uploads (`uploadBytes` > 0), else the response body's.
func perform(_ client: PocketClient, _ request: Request, _ transfer: Transfer, uploadBytes: Int) async throws -> Outcome {
    switch transfer {
    case .memory:
        let r = try await client.send(request)
        return Outcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : r.body.count, reused: r.timings.reusedConnection,
                       tlsResumed: r.timings.tlsResumed)
    case .discard:
        let r = try await client.stream(request)
        var n = 0
        for try await chunk in r.body { n += chunk.count }
        return Outcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : n, reused: true, tlsResumed: false)
    case .file(let path):
        let r = try await client.download(request, to: URL(filePath: path))
        return Outcome(status: r.status, bytes: uploadBytes > 0 ? uploadBytes : r.fileSize + r.body.count, reused: r.timings.reusedConnection,
                       tlsResumed: r.timings.tlsResumed)
    }
}
