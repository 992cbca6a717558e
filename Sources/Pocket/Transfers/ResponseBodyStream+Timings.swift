extension ResponseBodyStream {
    /// The request's timings (connect, TLS, first byte, total, bytes), once
    /// the body has been read to its end without error; nil before that and
    /// after a failure. `StreamingResponse` returns at the head, so this is
    /// where a streamed request's `Timings` become known.
    public var timings: Timings? { state.timings }
}
