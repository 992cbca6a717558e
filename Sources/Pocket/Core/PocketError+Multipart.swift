extension PocketError.Code {
    /// A one-shot request body (a `.stream`, or a multipart form with a stream
    /// part) would have to be sent a second time: the same form sent again,
    /// or the engine's retry-once on a pooled connection the server closed.
    /// The stream's bytes are gone, so Pocket refuses instead of sending a
    /// different body; `underlying` holds the connection error, if any.
    public static let requestBodyNotReplayable = PocketError.Code("request_body_not_replayable")
    /// A `PocketMultipartForm` cannot be encoded: a part header with CR, LF or NUL
    /// or a name that is not a token, a custom boundary that is malformed or
    /// occurs in an in-memory part. Nothing was sent.
    public static let invalidMultipartForm = PocketError.Code("invalid_multipart_form")
}
