extension PocketError.Code {
    // Building requests (paths, parameters, bodies, templates)

    /// A path template is malformed (an unclosed `{`, an empty `{}`, more
    /// identifiers than `:placeholders`, a dictionary as a path value).
    public static let invalidPathTemplate = PocketError.Code("invalid_path_template")
    /// A `{name}` placeholder has no value (missing or `.null`).
    public static let missingPathParameter = PocketError.Code("missing_path_parameter")
    /// Credentials an `PocketAuthorization` scheme cannot carry (a `:` in a Basic
    /// username, an invalid Bearer token, CR/LF).
    public static let invalidCredentials = PocketError.Code("invalid_credentials")
    /// A body could not be encoded (`PocketRequestBody.json`); `underlying` is the `EncodingError`.
    public static let encodingFailed = PocketError.Code("encoding_failed")
    /// No template is registered under the name asked for.
    public static let unknownTemplate = PocketError.Code("unknown_template")

    // Validating and decoding responses

    /// The status is not one `PocketValidation.statusCodes` accepts; the error
    /// carries the head (`response`) and the body (`body`).
    public static let unacceptableStatus = PocketError.Code("unacceptable_status")
    /// The `Content-Type` is missing or not one validation accepts; carries head and body.
    public static let unacceptableContentType = PocketError.Code("unacceptable_content_type")
    /// The body does not decode as the type asked for; the message names the
    /// JSON path (`root.issues[1].category`), `underlying` is the `DecodingError`.
    public static let decodingFailed = PocketError.Code("decoding_failed")
}
