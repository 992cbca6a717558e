extension PocketError.Code {
    /// A `PocketMultipartForm` cannot be encoded: a part header with CR, LF or NUL
    /// or a name that is not a token, a custom boundary that is malformed or
    /// occurs in an in-memory part. Nothing was sent.
    public static let invalidMultipartForm = PocketError.Code("invalid_multipart_form")
}
