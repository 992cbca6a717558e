#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A replayable form archives (a `PocketRequest` with it can be saved and sent
/// later, even from another process): fields and data parts with their
/// bytes, file parts by path (read when sent), and the boundary. A form
/// with a stream part cannot be encoded (`EncodingError.invalidValue`).
extension PocketMultipartForm: Codable {
    private enum CodingKeys: String, CodingKey { case boundary, customBoundary, parts }
    private enum PartKeys: String, CodingKey { case name, fileName, contentType, headers, bytes, file }

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
