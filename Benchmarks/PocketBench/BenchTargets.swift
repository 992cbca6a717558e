import Pocket
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where each benchmark request goes: the same request to each replica of
/// a set, taken in turn (`--balance round-robin`, which every benchmark
/// client can do, so the peers are loaded the same way).
///
/// Balancing by the client itself (`--balance p2c`) is a client's replica
/// set behind one request: then `requests` holds that one request and the
/// turn here is a no-op, so the request path stays the client's.
final class BenchTargets: Sendable {
    let requests: [PocketRequest]
    private let turn = Atomic<Int>(0)

    /// `request` to each of `replicas` in turn (one URL or none: `request` alone).
    init(_ request: PocketRequest, replicas: [URL]) {
        if replicas.count <= 1 {
            requests = [request]
        } else {
            requests = replicas.map { url in
                var r = request
                r.url = url
                return r
            }
        }
    }

    /// The next request to send.
    @inline(__always)
    func next() -> PocketRequest {
        if requests.count == 1 { return requests[0] }
        return requests[turn.wrappingAdd(1, ordering: .relaxed).oldValue % requests.count]
    }
}
