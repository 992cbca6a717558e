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

/// The body written by the engine to a file (a download), when `decide`
/// says so at the head (loop thread); else collected in memory.
struct FileDelivery: ResponseDelivery {
    var history: ReplicaHistory?
    var deadlineNanos: Int64 = .max
    let fd: Int32
    let decide: @Sendable (PocketResponseHead) -> InFlightRequest.FileDecision
    /// Set once the file is written to: the attempt's bytes reached the
    /// caller, so its failure is not retried.
    let writing = Lock(false)

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        let writing = self.writing, decide = self.decide
        return InFlightRequest(engine: client.engine, delivery: .file(fd: fd, decide: { head in
            let decision = decide(head)
            if case .write = decision { writing.withLock { $0 = true } }
            return decision
        }), progress: progress)
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> PocketResponse {
        response
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        guard var error = error as? PocketError, writing.withLock({ $0 }) else { return error }
        error.bodyDelivered = true
        return error
    }

    /// A complete response, written to the file when `decide` says so.
    func deliver(_ complete: PocketResponse) throws -> PocketResponse {
        var response = complete
        switch decide(response.head) {
        case .memory: return response
        case .abort(let error): throw error
        case .write:
            writing.withLock { $0 = true }
            let written = response.body.withUnsafeBytes { bytes -> Bool in
                var offset = 0
                while offset < bytes.count {
                    let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if n <= 0 { return false }
                    offset += n
                }
                return true
            }
            guard written else {
                let e = errno
                var error = PocketError(.fileSystem, "cannot write the download: \(String(cString: strerror(e)))", systemError: e)
                error.bodyDelivered = true
                throw error
            }
            response.body = Data()
            return response
        }
    }

    /// A download bypasses the cache: its body goes to a file, which the
    /// store does not keep (and a resumed one asks for a Range).
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await client.followingRedirects(request, progress: progress, self)
    }
}
