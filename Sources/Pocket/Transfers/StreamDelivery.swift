#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The body handed to a `PocketResponseBodyStream` as it arrives, at most
/// `bufferSize` bytes waiting for the reader; the send returns at the head.
struct StreamDelivery: ResponseDelivery {
    var history: ReplicaHistory?
    var deadlineNanos: Int64 = .max
    let bufferSize: Int

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        let state = BodyStreamState(highWater: bufferSize)
        let inflight = InFlightRequest(engine: client.engine, delivery: .stream(state), progress: progress)
        state.request = inflight
        return inflight
    }

    func response(_ head: consuming PocketResponse, from inflight: inout InFlightRequest,
                  client: PocketClient) -> PocketStreamingResponse {
        guard case .stream(let state) = inflight.delivery else { preconditionFailure("a stream delivery's request streams") }
        return PocketStreamingResponse(status: head.status, reason: head.reason, httpMinorVersion: head.httpMinorVersion,
                                       headers: head.headers, body: PocketResponseBodyStream(state))
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        if case .stream(let state) = inflight.delivery { state.abandon() }
        return error
    }

    func deliver(_ complete: PocketResponse) -> PocketStreamingResponse { PocketStreamingResponse(collected: complete) }

    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> PocketStreamingResponse {
        try await client.caching(request, progress: progress, self)
    }
}
