extension PocketResponseBodyStream {
    /// The request's timings (connect, TLS, first byte, total, bytes) once
    /// the engine has received the whole body without error (the reader may
    /// still have buffered chunks to read; after the iteration ends they are
    /// always there); nil before that and after a failure.
    /// `PocketStreamingResponse` returns at the head, so this is where a streamed
    /// request's `PocketTimings` become known.
    public var timings: PocketTimings? { state.timings }
}
