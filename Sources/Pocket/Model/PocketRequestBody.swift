#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a request's body comes from.
///
/// ```swift
/// request.body = .bytes(Data(#"{"name":"pocket"}"#.utf8))
/// request.body = .file(URL(filePath: "/var/backups/db.tar"))      // sendfile(2), Content-Length
/// request.body = .stream(chunks, length: nil)                     // Transfer-Encoding: chunked
/// ```
///
/// Bytes and files are *replayable*: the engine may send them again (the
/// retry-once rule on a pooled connection, later redirects and retries). A
/// stream is one-shot: it is never re-sent, so a request with a stream body
/// is never retried.
public struct PocketRequestBody: Sendable, Hashable, Codable {
    enum Source: Sendable, Hashable {
        case bytes(Data)
        case file(path: String, offset: Int, length: Int?)
        case stream(StreamSource, length: Int?)
        case multipart(PocketMultipartForm) // PocketRequestBody+Multipart.swift
    }

    let source: Source

    /// These bytes, with `Content-Length`.
    public static func bytes(_ data: Data) -> PocketRequestBody { PocketRequestBody(source: .bytes(data)) }

    /// The UTF-8 bytes of `text`, with `Content-Length`.
    public static func text(_ text: String) -> PocketRequestBody { .bytes(Data(text.utf8)) }

    /// A file's bytes from `offset`, `length` of them (nil: to the end of the
    /// file as it is when the request is sent), with `Content-Length`. Sent
    /// with `sendfile(2)` on plain connections and read in 16 KiB records on
    /// TLS ones: the file is never loaded into memory. Replayable. A file
    /// that cannot be opened, or ends before `length`, fails the request with
    /// `.fileReadFailed`.
    public static func file(_ url: URL, offset: Int = 0, length: Int? = nil) -> PocketRequestBody {
        PocketRequestBody(source: .file(path: url.path(percentEncoded: false), offset: offset, length: length))
    }

    /// Chunks from an `AsyncSequence`, pulled as the socket takes them (one
    /// chunk in flight: a slow connection slows the producer). With `length`
    /// the body has `Content-Length` and must be exactly that long
    /// (`.requestBodyLengthMismatch`); without, it is sent chunked. One-shot.
    /// If the sequence throws, the request fails with
    /// `.requestBodyStreamFailed` and the error as `underlying`.
    public static func stream<S: AsyncSequence & Sendable>(_ chunks: S, length: Int?) -> PocketRequestBody
    where S.Element == Data {
        PocketRequestBody(source: .stream(StreamSource(chunks), length: length))
    }

    /// The body's length, when known before sending (nil: a stream without
    /// length, or a file whose length is read when it is sent).
    public var length: Int? {
        switch source {
        case .bytes(let d): return d.count
        case .file(_, _, let length): return length
        case .stream(_, let length): return length
        case .multipart: return nil // files are measured when sent
        }
    }

    /// False for streams (and forms with a stream part): they can be sent once only.
    public var isReplayable: Bool {
        if case .stream = source { return false }
        if case .multipart(let form) = source { return form.isReplayable }
        return true
    }

    /// The bytes of a `.bytes` body, nil for files and streams.
    public var data: Data? {
        if case .bytes(let d) = source { return d }
        return nil
    }

    // MARK: Codable (bytes, files, replayable forms; a stream cannot be archived)

    private enum CodingKeys: String, CodingKey { case bytes, file, offset, length, multipart }

    /// Decodes the form `encode(to:)` writes.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let d = try c.decodeIfPresent(Data.self, forKey: .bytes) {
            source = .bytes(d)
        } else if let form = try c.decodeIfPresent(PocketMultipartForm.self, forKey: .multipart) {
            source = .multipart(form)
        } else {
            source = .file(path: try c.decode(String.self, forKey: .file),
                           offset: try c.decodeIfPresent(Int.self, forKey: .offset) ?? 0,
                           length: try c.decodeIfPresent(Int.self, forKey: .length))
        }
    }

    /// Encodes bytes, a file range (its path, not its content) or a multipart form;
    /// throws `EncodingError` for a stream, which is one-shot.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch source {
        case .bytes(let d):
            try c.encode(d, forKey: .bytes)
        case let .file(path, offset, length):
            try c.encode(path, forKey: .file)
            try c.encode(offset, forKey: .offset)
            try c.encodeIfPresent(length, forKey: .length)
        case .stream:
            throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath,
                                                         debugDescription: "a stream body is one-shot and cannot be encoded"))
        case .multipart(let form):
            try c.encode(form, forKey: .multipart)
        }
    }

    init(source: Source) { self.source = source }
}

/// A type-erased `AsyncSequence` of `Data`; equal only to itself.
final class StreamSource: Sendable, Hashable {
    /// Makes the iterator, once per send (the sequence decides whether a
    /// second iteration yields the same bytes; Pocket never asks for one).
    let makeNext: @Sendable () -> ChunkIterator

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Data {
        makeNext = { ChunkIterator(sequence.makeAsyncIterator()) }
    }

    static func == (a: StreamSource, b: StreamSource) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// One iteration of a body stream, used by one pump task only.
final class ChunkIterator: @unchecked Sendable {
    // Invariant: only the single pump task calls `next()`, one call at a time.
    private let nextChunk: () async throws -> Data?

    init<I: AsyncIteratorProtocol>(_ iterator: I) where I.Element == Data {
        var it = iterator
        nextChunk = { try await it.next() }
    }

    func next() async throws -> Data? { try await nextChunk() }
}

extension PocketRequestBody {
    /// `value` encoded as JSON, as bytes (replayable, `Content-Length`).
    ///
    /// The default encoder sorts keys, so the same value always gives the same
    /// bytes (an archived request compares and hashes equal to a rebuilt one).
    /// Throws `.encodingFailed` (the `EncodingError` as `underlying`), e.g.
    /// for a non-finite `Double`. The `Content-Type` comes from the request's
    /// format (JSON by default) or its headers: a body is bytes only.
    public static func json<T: Encodable>(_ value: T, encoder: JSONEncoder = PocketRequestBody.defaultJSONEncoder())
        throws -> PocketRequestBody {
        do {
            return .bytes(try encoder.encode(value))
        } catch {
            throw PocketError(.encodingFailed, "cannot encode \(T.self) as JSON: \(error)", underlying: error)
        }
    }

    /// A `JSONEncoder` with sorted keys and unescaped slashes: `.json`'s default.
    public static func defaultJSONEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `fields` as `application/x-www-form-urlencoded` (HTML's form
    /// encoding: UTF-8, `+` for a space, everything but `A–Z a–z 0–9 - . _ ~`
    /// percent-encoded; keys in order; nested values and arrays as in
    /// `PocketQueryEncoding`, brackets by default). Use with `format: .form`
    /// (or a `Content-Type` header).
    public static func form(_ fields: [String: PocketParameterValue], encoding: PocketQueryEncoding = PocketQueryEncoding()) -> PocketRequestBody {
        .bytes(Data(encoding.encode(fields, spaceAsPlus: true).utf8))
    }
}

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
