extension PocketRequestBody {
    /// A `multipart/form-data` body streamed from `form` (see
    /// `PocketMultipartForm`): `Content-Length` when every part's size is known,
    /// chunked otherwise; file parts with `sendfile(2)`. The request gets
    /// `Content-Type: multipart/form-data; boundary=...` unless it sets its
    /// own. Replayable unless the form has a stream part.
    public static func multipart(_ form: PocketMultipartForm) -> PocketRequestBody {
        PocketRequestBody(source: .multipart(form))
    }

    /// The form of a `.multipart` body, nil for other bodies.
    public var multipartForm: PocketMultipartForm? {
        if case .multipart(let form) = source { return form }
        return nil
    }
}
