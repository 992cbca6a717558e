#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes
import Pocket

// swift-http-types interop. Conversion happens here, at the boundary, once
// per request: the request becomes a `PocketRequest` and takes Pocket's one
// request path (middleware, retries, redirects, validation, events); the
// response head becomes an `HTTPResponse`. The native API pays nothing for it.

extension PocketClient {
    /// Sends an `HTTPRequest` (its `scheme`, `authority` and `path` make the
    /// URL) with `body` and returns the response with its whole body.
    ///
    /// The request takes the same path as `send(_: PocketRequest)`: the
    /// client's middleware and retry policy, redirects, validation, limits
    /// (`Configuration.limits.maxBodyBytes`) and events. A request without
    /// a scheme or authority, or with a scheme other than http and https,
    /// throws `.invalidURL` before anything is sent.
    ///
    /// ```swift
    /// var request = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:8080", path: "/items")
    /// request.headerFields[.contentType] = "application/json"
    /// let (response, body) = try await client.send(request, body: .text(#"{"name":"pocket"}"#))
    /// ```
    public func send(_ request: HTTPRequest, body: PocketRequestBody? = nil,
                     options: PocketSendOptions = PocketSendOptions()) async throws -> (response: HTTPResponse, body: Data) {
        let response = try await send(try PocketRequest(request, body: body), options: options)
        return (HTTPResponse(status: response.status, reason: response.reason, headers: response.headers), response.body)
    }

    /// Sends an `HTTPRequest` with `body` and returns at the response head;
    /// the body is read from the returned stream as it arrives, with
    /// backpressure (at most `bufferSize` bytes wait for the reader, 256 KiB
    /// by default; see `PocketClient.stream`).
    ///
    /// ```swift
    /// let (response, body) = try await client.stream(HTTPRequest(method: .get, scheme: "http",
    ///                                                             authority: "127.0.0.1:8080", path: "/big"))
    /// for try await chunk in body { try file.write(contentsOf: chunk) }
    /// ```
    public func stream(_ request: HTTPRequest, body: PocketRequestBody? = nil, bufferSize: Int = 256 << 10,
                       options: PocketSendOptions = PocketSendOptions())
        async throws -> (response: HTTPResponse, body: PocketResponseBodyStream) {
        let response = try await stream(try PocketRequest(request, body: body), bufferSize: bufferSize, options: options)
        return (HTTPResponse(status: response.status, reason: response.reason, headers: response.headers), response.body)
    }
}

extension PocketRequest {
    /// The Pocket request for an `HTTPRequest`: method, the URL from
    /// `scheme://authority/path`, the header fields in order, and `body`.
    /// Throws `.invalidURL` (naming what is missing) when the scheme or the
    /// authority is missing or the URL does not parse, and
    /// `.unsupportedScheme` for a scheme other than http and https.
    public init(_ request: HTTPRequest, body: PocketRequestBody? = nil) throws {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw PocketError(.invalidURL, "\(request.method) \(request.path ?? "(no path)"): an HTTPRequest needs a scheme and an authority to be sent (scheme: \(request.scheme ?? "none"), authority: \(request.authority ?? "none"))")
        }
        let lowered = scheme.lowercased()
        guard lowered == "http" || lowered == "https" else {
            throw PocketError(.unsupportedScheme, "\(request.method) \(scheme)://\(authority)\(request.path ?? ""): only http and https are supported")
        }
        let path = request.path ?? "/"
        let text = "\(lowered)://\(authority)\(path.isEmpty ? "/" : path)"
        guard let url = URL(string: text), url.host != nil else {
            throw PocketError(.invalidURL, "\(request.method) \(text): not a valid URL")
        }
        self.init(method: PocketMethod(request.method.rawValue), url: url, headers: PocketHeaders(request.headerFields),
                  body: body)
    }
}

extension PocketHeaders {
    /// The fields of `fields`, in order, names as written (`rawName`).
    public init(_ fields: HTTPFields) {
        var headers = PocketHeaders()
        headers.reserveCapacity(fields.count)
        for field in fields { headers.add(name: field.name.rawName, value: field.value) }
        self = headers
    }
}

extension HTTPFields {
    /// The fields of `headers`, in order. A field whose name is not a valid
    /// HTTP token is left out (Pocket's engine never accepts one from a
    /// server, so a response's fields always convert whole).
    public init(_ headers: PocketHeaders) {
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for field in headers {
            guard let name = HTTPField.Name(field.name) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        self = fields
    }
}

extension HTTPResponse {
    /// The `HTTPResponse` of a Pocket response head: status, reason phrase
    /// and header fields in order.
    public init(status: Int, reason: String, headers: PocketHeaders) {
        self.init(status: HTTPResponse.Status(code: (0...999).contains(status) ? status : 500, reasonPhrase: reason),
                  headerFields: HTTPFields(headers))
    }

    /// The `HTTPResponse` of a collected Pocket response's head.
    public init(_ response: PocketResponse) {
        self.init(status: response.status, reason: response.reason, headers: response.headers)
    }

    /// The `HTTPResponse` of a streamed Pocket response's head.
    public init(_ response: PocketStreamingResponse) {
        self.init(status: response.status, reason: response.reason, headers: response.headers)
    }
}
