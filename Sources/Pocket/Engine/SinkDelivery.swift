internal import CHTTPEngine

/// `InFlightRequest`'s `.sink` delivery: the response body is written into
/// storage the caller owns (a `PocketResponseBodySink` it makes at the head)
/// instead of `PocketResponse.body`, straight from the engine's buffer, so
/// each byte is copied once, by the sink.
///
/// Touched by the loop thread only, from the head to `on_done`; the sending
/// task reads `sink` and `written` after its continuation resumed (at the
/// end, or at the head when `returnsAtHead`, after which the loop never
/// writes them again).
final class SinkDelivery: @unchecked Sendable {
    /// The send returns at the head and the body follows into the sink
    /// (`stream`), instead of returning once the body is complete (`send`).
    let returnsAtHead: Bool
    /// The current body's sink, made at its head; nil before.
    var sink: (any PocketResponseBodySink)?
    /// Body bytes handed to it.
    var written = 0
    /// Makes the caller's sink for the body that starts (a constant).
    private let make: @Sendable (PocketResponseBodyStart) -> any PocketResponseBodySink

    init(returnsAtHead: Bool, make: @escaping @Sendable (PocketResponseBodyStart) -> any PocketResponseBodySink) {
        self.returnsAtHead = returnsAtHead
        self.make = make
    }

    /// Loop thread: the final head arrived; its body goes to a new sink.
    /// Only a returning-at-head sink gets a working control: pausing a body
    /// the send waits for would only stall it.
    func start(_ request: InFlightRequest, head: PocketResponseHead, contentLength: Int64) {
        let control = PocketResponseBodyControl(returnsAtHead ? request : nil)
        sink = make(PocketResponseBodyStart(head: head, contentLength: contentLength >= 0 ? Int(contentLength) : nil,
                                                control: control))
    }

    /// Loop thread: decoded body bytes, borrowed until return. Returns the
    /// engine's answer (a pause only when the sink is read as a stream).
    @inline(__always)
    func write(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        written &+= bytes.count
        guard let sink, sink.write(bytes) == .pause, returnsAtHead else { return Int32(PK_BODY_CONTINUE) }
        return Int32(PK_BODY_PAUSE)
    }

    /// Loop thread: the body of a returning-at-head send ended.
    func end(_ failure: PocketError?, timings: PocketTimings) {
        sink?.finish(failure, timings: failure == nil ? timings : nil)
    }
}
