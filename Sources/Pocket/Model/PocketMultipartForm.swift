#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `multipart/form-data` request body (RFC 7578), streamed as it is sent.
///
/// ```swift
/// var form = PocketMultipartForm()
/// form.addField("title", "Holiday")
/// form.addFile("photo", at: URL(filePath: "/data/beach.jpg"))            // image/jpeg, sendfile(2)
/// form.addData("notes", Data("...".utf8), fileName: "notes.txt")        // text/plain
/// form.addStream("log", chunks, length: nil, fileName: "app.log")       // chunked, one-shot
/// var request = PocketRequest(method: .post, url: URL(string: "http://127.0.0.1:8080/upload")!)
/// request.body = .multipart(form)   // Content-Type: multipart/form-data; boundary=...
/// ```
///
/// Nothing is encoded ahead: file parts are read as they are sent
/// (`sendfile(2)` on plain connections, 16 KiB records on TLS), stream parts
/// are pulled one chunk at a time, so memory does not grow with the form.
/// When every part's size is known (fields, data, files, streams with a
/// length) the body has a `Content-Length` and progress has a total;
/// otherwise it is sent chunked.
///
/// Names and file names are sent as UTF-8 in quoted strings, with `"`, CR
/// and LF percent-encoded (`%22`, `%0D`, `%0A`: the HTML rule RFC 7578 §4.2
/// refers to), and also `\` (`%5C`) and the other control bytes: a parser
/// that reads quoted strings the RFC 2045 way takes a backslash as an escape,
/// so `a\` would swallow the closing quote. No `filename*` parameter: RFC
/// 7578 §4.2 says it must not be used.
///
/// A form is a value; copies share their stream parts. It is replayable
/// (`isReplayable`) unless it has a stream part: then it can be sent once,
/// and a second send — or the engine's retry-once on a stale pooled
/// connection — fails with `.bodyNotReplayable`.
public struct PocketMultipartForm: Sendable, Hashable {
    /// One part: its name, optional file name and type, extra headers and content.
    public struct Part: Sendable, Hashable {
        /// The form field name (`Content-Disposition: form-data; name=...`).
        public let name: String
        /// The file name, if the part is a file (`filename=...`).
        public let fileName: String?
        /// The part's `Content-Type`; nil for a text field (RFC 7578 §4.4:
        /// `text/plain` is implied).
        public let contentType: String?
        /// Extra header fields of the part, after the two above. A
        /// `Content-Disposition` or `Content-Type` here replaces Pocket's.
        public let headers: PocketHeaders
        let content: Content

        /// The content's size when known without reading it: the bytes of a
        /// field or data part, a stream's declared length; nil for a file
        /// (its size is read when it is sent) and a stream without length.
        public var length: Int? {
            switch content {
            case .bytes(let d): return d.count
            case .file: return nil
            case .stream(_, let length): return length
            }
        }
    }

    enum Content: Sendable, Hashable {
        case bytes(Data)
        case file(path: String)
        case stream(StreamSource, length: Int?)
    }

    /// The parts, in the order they are sent.
    public private(set) var parts: [Part] = []
    /// The boundary between parts. Random (`pocket-` and 32 hex digits, 128
    /// bits) unless given to `init(boundary:)`; a random one is replaced
    /// when a field or data part added later contains it.
    public private(set) var boundary: String
    let boundaryIsCustom: Bool
    /// Shared by the copies of a form with a stream part: the one send it allows.
    private(set) var sendOnce: SendOnce?

    /// An empty form with a random boundary.
    public init() {
        boundary = Self.randomBoundary()
        boundaryIsCustom = false
        sendOnce = nil
    }

    /// An empty form with this boundary (for servers or tests that need a
    /// known one). It must be 1–70 characters of RFC 2046 §5.1.1 `bchars`,
    /// not ending in a space, and must not occur in a field or data part;
    /// otherwise sending fails with `.invalidMultipartForm`. File and stream
    /// parts are not read before sending, so keeping it out of them is the
    /// caller's part (a random boundary needs no such care).
    public init(boundary: String) {
        self.boundary = boundary
        boundaryIsCustom = true
        sendOnce = nil
    }

    /// The request's `Content-Type` for this form (set by `.multipart`
    /// unless the request has its own).
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// False when a part is a stream: the form can then be sent once only.
    public var isReplayable: Bool {
        !parts.contains { if case .stream = $0.content { return true } else { return false } }
    }

    /// A text field, sent as its UTF-8 bytes without a `Content-Type`.
    public mutating func addField(_ name: String, _ value: String, headers: PocketHeaders = [:]) {
        append(Part(name: name, fileName: nil, contentType: nil, headers: headers, content: .bytes(Data(value.utf8))))
    }

    /// A file part read from `url` when the form is sent (its size then,
    /// with `sendfile(2)` on plain connections: never loaded into memory).
    /// `fileName` defaults to the path's last component, `contentType` to
    /// the type of its extension (`application/octet-stream` if unknown). A
    /// file that cannot be opened, or shrinks while it is sent, fails the
    /// request with `.fileReadFailed`.
    public mutating func addFile(_ name: String, at url: URL, fileName: String? = nil, contentType: String? = nil,
                                 headers: PocketHeaders = [:]) {
        let file = fileName ?? url.lastPathComponent
        append(Part(name: name, fileName: file, contentType: contentType ?? MIMETypes.type(forFileName: file),
                    headers: headers, content: .file(path: url.path(percentEncoded: false))))
    }

    /// A part with these bytes. With a `fileName` it is a file part whose
    /// `contentType` defaults to the type of the name's extension; without,
    /// `contentType` defaults to `application/octet-stream`.
    public mutating func addData(_ name: String, _ data: Data, fileName: String? = nil, contentType: String? = nil,
                                 headers: PocketHeaders = [:]) {
        append(Part(name: name, fileName: fileName, contentType: contentType ?? Self.defaultType(fileName),
                    headers: headers, content: .bytes(data)))
    }

    /// A part whose bytes come from an `AsyncSequence`, pulled as the socket
    /// takes them (one chunk in flight). With `length` it must produce
    /// exactly that many bytes (`.requestBodyLengthMismatch`); without, the
    /// whole form is sent chunked. Makes the form one-shot. If the sequence
    /// throws, the request fails with `.requestBodyStreamFailed`.
    /// `contentType` defaults as for `addData`.
    public mutating func addStream<S: AsyncSequence & Sendable>(_ name: String, _ chunks: S, length: Int?,
                                                               fileName: String? = nil, contentType: String? = nil,
                                                               headers: PocketHeaders = [:]) where S.Element == Data {
        addStream(name, StreamSource(chunks), length: length, fileName: fileName, contentType: contentType, headers: headers)
    }

    /// `addStream` for an already type-erased sequence.
    mutating func addStream(_ name: String, _ source: StreamSource, length: Int?, fileName: String?, contentType: String?,
                            headers: PocketHeaders = [:]) {
        append(Part(name: name, fileName: fileName, contentType: contentType ?? Self.defaultType(fileName),
                    headers: headers, content: .stream(source, length: length.map { max(0, $0) })))
    }

    /// Parts and boundary as archived (MultipartForm+Codable.swift).
    mutating func restore(parts: [Part], boundary: String) {
        self.parts = parts
        self.boundary = boundary
    }

    private static func defaultType(_ fileName: String?) -> String {
        fileName.map(MIMETypes.type(forFileName:)) ?? MIMETypes.fallback
    }

    private mutating func append(_ part: Part) {
        parts.append(part)
        if case .stream = part.content, sendOnce == nil { sendOnce = SendOnce() }
        guard !boundaryIsCustom, case .bytes(let data) = part.content, MultipartEncoding.contains(data, boundary) else { return }
        // Regenerate until no in-memory part contains it (128 random bits:
        // a second draw practically never collides again).
        repeat { boundary = Self.randomBoundary() } while parts.contains {
            if case .bytes(let d) = $0.content { return MultipartEncoding.contains(d, boundary) }
            return false
        }
    }

    static func randomBoundary() -> String {
        var rng = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef".utf8)
        var out = Array("pocket-".utf8)
        for _ in 0..<2 {
            var v = rng.next() as UInt64
            for _ in 0..<16 {
                out.append(hex[Int(v & 15)])
                v >>= 4
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The single send a one-shot form allows; equal only to itself.
final class SendOnce: Sendable, Hashable {
    private let used = Atomic<Bool>(false)
    /// True the first time only.
    func claim() -> Bool { !used.exchange(true, ordering: .acquiringAndReleasing) }
    /// Gives the send back: it failed before any stream part was touched.
    func release() { used.store(false, ordering: .releasing) }
    static func == (a: SendOnce, b: SendOnce) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A replayable form archives (a `PocketRequest` with it can be saved and sent
/// later, even from another process): fields and data parts with their
/// bytes, file parts by path (read when sent), and the boundary. A form
/// with a stream part cannot be encoded (`EncodingError.invalidValue`).
extension PocketMultipartForm: Codable {
    private enum CodingKeys: String, CodingKey { case boundary, customBoundary, parts }
    private enum PartKeys: String, CodingKey { case name, fileName, contentType, headers, bytes, file }

    /// Decodes the form `encode(to:)` writes: the same parts and boundary.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let boundary = try c.decode(String.self, forKey: .boundary)
        self = try c.decode(Bool.self, forKey: .customBoundary) ? PocketMultipartForm(boundary: boundary) : PocketMultipartForm()
        var list = try c.nestedUnkeyedContainer(forKey: .parts)
        var parts: [Part] = []
        while !list.isAtEnd {
            let p = try list.nestedContainer(keyedBy: PartKeys.self)
            let content: Content
            if let bytes = try p.decodeIfPresent(Data.self, forKey: .bytes) {
                content = .bytes(bytes)
            } else {
                content = .file(path: try p.decode(String.self, forKey: .file))
            }
            parts.append(Part(name: try p.decode(String.self, forKey: .name),
                              fileName: try p.decodeIfPresent(String.self, forKey: .fileName),
                              contentType: try p.decodeIfPresent(String.self, forKey: .contentType),
                              headers: try p.decodeIfPresent(PocketHeaders.self, forKey: .headers) ?? [:], content: content))
        }
        // The archived boundary was checked against these parts when they were added.
        self.restore(parts: parts, boundary: boundary)
    }

    /// Encodes the boundary and each part (name, file name, type, fields, and its bytes
    /// or file path); throws `EncodingError` for a stream part, which is one-shot.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(boundary, forKey: .boundary)
        try c.encode(boundaryIsCustom, forKey: .customBoundary)
        var list = c.nestedUnkeyedContainer(forKey: .parts)
        for part in parts {
            var p = list.nestedContainer(keyedBy: PartKeys.self)
            try p.encode(part.name, forKey: .name)
            try p.encodeIfPresent(part.fileName, forKey: .fileName)
            try p.encodeIfPresent(part.contentType, forKey: .contentType)
            if !part.headers.isEmpty { try p.encode(part.headers, forKey: .headers) }
            switch part.content {
            case .bytes(let d): try p.encode(d, forKey: .bytes)
            case .file(let path): try p.encode(path, forKey: .file)
            case .stream:
                throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath,
                                                             debugDescription: "part \"\(part.name)\" is a stream: one-shot, it cannot be encoded"))
            }
        }
    }
}

extension PocketMultipartForm {
    /// The bytes the form's body would have if sent now: part heads,
    /// contents and delimiters, with file parts at their current size
    /// (`stat`). Nil when a stream part has no length (the form goes out
    /// chunked). Throws `.invalidMultipartForm` for a form that cannot be
    /// sent, `.fileReadFailed` for a file part that cannot be read.
    public func encodedLength() throws(PocketError) -> Int? {
        let layout = try MultipartEncoding.layout(self)
        var total = 0
        for segment in layout.segments {
            switch segment {
            case .bytes(let range):
                total += range.count
            case .file(let path):
                var st = stat()
                guard stat(path, &st) == 0 else {
                    let e = errno
                    throw PocketError(.fileReadFailed, "cannot read \(path): \(String(cString: strerror(e)))", systemError: e)
                }
                total += Int(st.st_size)
            case .stream(_, let length):
                guard let length else { return nil }
                total += length
            }
        }
        return total
    }
}

/// The MIME type a multipart file part gets from its file name's extension.
///
/// A small built-in table of common types (no system database is read, so
/// the result is the same on every machine); anything else is
/// `application/octet-stream` (RFC 7578 §4.4: the default for files).
enum MIMETypes {
    static let fallback = "application/octet-stream"

    /// The type for `fileName`'s extension (case-insensitive), or the fallback.
    static func type(forFileName fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return fallback }
        let ext = fileName[fileName.index(after: dot)...].lowercased()
        return table[ext] ?? fallback
    }

    private static let table: [String: String] = [
        // text
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown",
        "csv": "text/csv", "tsv": "text/tab-separated-values", "html": "text/html", "htm": "text/html",
        "css": "text/css", "xml": "application/xml", "ics": "text/calendar",
        // data
        "json": "application/json", "jsonl": "application/jsonl", "ndjson": "application/x-ndjson",
        "js": "text/javascript", "mjs": "text/javascript", "yaml": "application/yaml", "yml": "application/yaml",
        "pdf": "application/pdf", "wasm": "application/wasm", "bin": "application/octet-stream",
        // archives
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "zst": "application/zstd", "7z": "application/x-7z-compressed",
        // images
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon", "bmp": "image/bmp", "tif": "image/tiff",
        "tiff": "image/tiff", "avif": "image/avif", "heic": "image/heic",
        // audio and video
        "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "oga": "audio/ogg", "flac": "audio/flac",
        "m4a": "audio/mp4", "aac": "audio/aac", "opus": "audio/opus", "mp4": "video/mp4", "m4v": "video/mp4",
        "webm": "video/webm", "mov": "video/quicktime", "mkv": "video/x-matroska", "avi": "video/x-msvideo",
        // documents and fonts
        "doc": "application/msword", "xls": "application/vnd.ms-excel", "ppt": "application/vnd.ms-powerpoint",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "rtf": "application/rtf", "epub": "application/epub+zip",
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
    ]
}
