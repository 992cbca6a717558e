#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The body collected into `PocketResponse.body` (bounded by `maxBodyBytes`).
/// Finished engine requests are kept for reuse (`InFlightSpares`).
struct CollectDelivery: ResponseDelivery {
    var history: ReplicaHistory?
    var deadlineNanos: Int64 = .max
    static var hedges: Bool { true }

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        client.spares.collectingRequest(engine: client.engine, progress: progress)
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> PocketResponse {
        client.spares.recycle(&inflight)
        return response
    }

    func deliver(_ complete: PocketResponse) -> PocketResponse { complete }

    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await client.caching(request, progress: progress, self)
    }
}
