#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The body written into a `PocketResponseBodySink` made at each head;
/// the send returns once the body is complete, or at the head when
/// `returnsAtHead` (the body then goes on into the sink).
struct SinkWriteDelivery: ResponseDelivery {
    var history: ReplicaHistory?
    var deadlineNanos: Int64 = .max
    let returnsAtHead: Bool
    let make: @Sendable (PocketResponseBodyStart) -> any PocketResponseBodySink

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        InFlightRequest(engine: client.engine, delivery: .sink(SinkDelivery(returnsAtHead: returnsAtHead, make: make)),
                        progress: progress)
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> SunkResponse {
        guard case .sink(let delivery) = inflight.delivery, let sink = delivery.sink else {
            preconditionFailure("every response has a head, and the head made the sink")
        }
        if !returnsAtHead { sink.finish(nil, timings: response.timings) }
        // A body still being written (returned at the head) is not counted:
        // the loop thread goes on writing `written`.
        return SunkResponse(response: response, sink: sink, written: returnsAtHead ? 0 : delivery.written,
                            running: returnsAtHead ? inflight : nil)
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        if !returnsAtHead, case .sink(let delivery) = inflight.delivery {
            delivery.sink?.finish(error as? PocketError ?? PocketError(.cancelled, "the request was cancelled"), timings: nil)
        }
        return error
    }

    func deliver(_ complete: PocketResponse) -> SunkResponse { SunkResponse(replaying: complete, into: make) }

    /// The cache keeps whole bodies: a cached response (or one fetched for
    /// the cache) is collected, then written into one sink.
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> SunkResponse {
        deliver(try await client.caching(request, progress: progress, CollectDelivery()))
    }
}
