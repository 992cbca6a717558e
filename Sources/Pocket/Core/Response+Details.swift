#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// MTPocket's response object, in Swift: the details around status and body.
extension PocketResponse {
    /// The status with a name (`.ok`, `.notFound`, …); `status` is its code.
    public var httpStatus: PocketStatus { PocketStatus(status) }

    /// The media type of `Content-Type`, lowercased, without parameters
    /// (`application/json`), or nil when the server sent none.
    public var mimeType: String? {
        guard let value = headers["Content-Type"] else { return nil }
        let type = TextCharset.trimmed(value.split(separator: ";", maxSplits: 1).first ?? "")
        return type.isEmpty ? nil : type.lowercased()
    }

    /// The length the server announced (`Content-Length`), or nil for none
    /// (chunked, close-delimited) or an unparsable value. For a decoded
    /// (gzip) body it is the encoded length, not `body.count`.
    public var expectedContentLength: Int? { expectedContentLength(header: "Content-Length") }

    /// The integer value of another header naming the length, as MTPocket's
    /// `contentLengthHeader` (`X-Stream-Length`, …), or nil.
    public func expectedContentLength(header name: String) -> Int? {
        guard let value = headers[name].map({ TextCharset.trimmed($0[...]) }), let n = Int(value), n >= 0 else { return nil }
        return n
    }

    /// The body bytes (MTPocket's `data`): the same as `body`.
    public var data: Data { body }

    /// The format the request was built with (JSON when it had none): what
    /// `decode` and validation expect.
    public var format: PocketContentFormat { request?.format ?? .json }

    /// The sent request's body bytes, or nil when it had none or it was a
    /// file or stream (not kept in memory).
    public var requestData: Data? { request?.body?.data }

    /// The sent request's body as UTF-8 text (invalid bytes as U+FFFD), for
    /// debugging; nil as for `requestData`.
    public var requestText: String? { requestData.map { String(decoding: $0, as: UTF8.self) } }

    /// The head: status, reason and headers.
    public var head: PocketResponseHead { PocketResponseHead(status: status, reason: reason, headers: headers) }
}
