#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A file inside a record that a pipe saves as `multipart/form-data`
/// (AGPipe's `AGFilePart`, `AGFileDataPart` and `AGStreamPart`).
///
/// ```swift
/// struct Project: Codable, PocketMultipartRecord {
///     var id: Int?
///     var title: String
///     var logo: URL?                       // a local file
///     var fileParts: [String: PocketFilePart] { logo.map { ["logo": .file($0)] } ?? [:] }
/// }
/// let saved = try await projects.save(project)   // multipart: title, logo
/// ```
public struct PocketFilePart: Sendable, Hashable {
    enum Content: Sendable, Hashable {
        case file(URL)
        case data(Data)
        case stream(StreamSource, length: Int?)
    }

    let content: Content
    /// The part's file name; nil takes the file's own name for `.file`.
    public var fileName: String?
    /// The part's `Content-Type`; nil infers it from the file name's
    /// extension (`application/octet-stream` when unknown).
    public var contentType: String?

    /// A file read when the record is sent (sendfile(2), never loaded).
    public static func file(_ url: URL, fileName: String? = nil, contentType: String? = nil) -> PocketFilePart {
        PocketFilePart(content: .file(url), fileName: fileName, contentType: contentType)
    }

    /// Bytes in memory, sent as a file called `fileName`.
    public static func data(_ data: Data, fileName: String, contentType: String? = nil) -> PocketFilePart {
        PocketFilePart(content: .data(data), fileName: fileName, contentType: contentType)
    }

    /// Bytes from an `AsyncSequence` (one-shot: the save cannot be re-sent);
    /// without `length` the form goes out chunked.
    public static func stream<S: AsyncSequence & Sendable>(_ chunks: S, length: Int?, fileName: String,
                                                           contentType: String? = nil) -> PocketFilePart where S.Element == Data {
        PocketFilePart(content: .stream(StreamSource(chunks), length: length), fileName: fileName, contentType: contentType)
    }

    /// Appends this file as the part `name` of `form`.
    func add(to form: inout PocketMultipartForm, name: String) {
        switch content {
        case .file(let url):
            form.addFile(name, at: url, fileName: fileName, contentType: contentType)
        case .data(let data):
            form.addData(name, data, fileName: fileName ?? name, contentType: contentType)
        case .stream(let source, let length):
            form.addStream(name, source, length: length, fileName: fileName ?? name, contentType: contentType)
        }
    }
}

/// A record that carries files: `PocketPipe.save` sends it as
/// `multipart/form-data` instead of JSON, as AGPipe does for a payload with
/// file parts. Every top-level property of the record's JSON encoding that
/// is not a key of `fileParts` becomes a text field (strings as they are,
/// numbers and booleans as their JSON text, arrays and objects as JSON,
/// nulls left out); then each file part follows, in key order. Upload
/// progress comes through `PocketPipeConfiguration.uploadProgress`, per part and
/// in total (`PocketTransferProgress.part`).
public protocol PocketMultipartRecord: PocketPipeBodyProviding, Encodable {
    /// The files to upload, by form field name.
    var fileParts: [String: PocketFilePart] { get }
}

extension PocketMultipartRecord {
    public func pipeRequestBody() throws -> (body: PocketRequestBody, contentType: String) {
        let form = try multipartForm()
        return (.multipart(form), form.contentType)
    }

    /// The form `PocketPipe.save` sends for this record.
    public func multipartForm() throws -> PocketMultipartForm {
        let files = fileParts
        guard let encoded = try PocketRequestBody.json(self).data,
              case .dictionary(let fields)? = try? JSONDecoder().decode(PocketParameterValue.self, from: encoded) else {
            throw PocketError(.encodingFailed, "\(Self.self) does not encode as a JSON object")
        }
        var form = PocketMultipartForm()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) where files[name] == nil {
            guard let text = try Self.fieldText(value) else { continue }
            form.addField(name, text)
        }
        for (name, part) in files.sorted(by: { $0.key < $1.key }) {
            part.add(to: &form, name: name)
        }
        return form
    }

    private static func fieldText(_ value: PocketParameterValue) throws -> String? {
        switch value {
        case .null: return nil
        case .string(let s): return s
        default:
            return try PocketRequestBody.json(value).data.map { String(decoding: $0, as: UTF8.self) }
        }
    }
}

/// Reading records a pipe does not know the shape of: the record id, paging
/// links in a body, a list under a key. JSON decodes into `PocketParameterValue`.
extension PocketParameterValue {
    /// The value at a dot-separated key path (`"meta.paging.next"`), or nil.
    func value(at path: String) -> PocketParameterValue? {
        var current = self
        for key in path.split(separator: ".") {
            guard case .dictionary(let fields) = current, let next = fields[String(key)] else { return nil }
            current = next
        }
        return current
    }

    /// A record id as it goes into a URL: a non-empty string or a number;
    /// nil for null, an empty string, or anything else.
    var recordID: String? {
        switch self {
        case .string(let s): return s.isEmpty ? nil : s
        case .integer(let i): return String(i)
        case .double(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        default: return nil
        }
    }
}
