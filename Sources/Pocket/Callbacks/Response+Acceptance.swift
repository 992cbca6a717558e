/// What the callback and pipe layers count as a successful response.
extension Response {
    /// Nil for 2xx; otherwise an error carrying the head (the body stays in
    /// the response, which failure handlers get too).
    // TODO(merge): use the api branch's validation (acceptable statuses and
    // content types per client and request) and its error code.
    func unacceptableStatusError() -> PocketError? {
        guard !isSuccess else { return nil }
        return PocketError(PocketError.Code("unacceptable_status"), "the server answered \(status)\(reason.isEmpty ? "" : " \(reason)")",
                           response: ResponseHead(status: status, reason: reason, headers: headers))
    }
}
