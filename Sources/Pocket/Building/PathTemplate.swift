/// Fills a path's placeholders, in both styles the seeds use:
///
/// - MTPocket's `:name`, at the start of a segment (`needles/:id`,
///   `files/:id.json`), filled in order from `identifiers`. An array
///   identifier is comma-joined (`[2, 4]` → `2,4`). A placeholder left
///   without an identifier (or given `.null`, `[]` or `""`) is removed, with its
///   segment when it was the whole segment. More identifiers than placeholders is an
///   error (`.invalidPathTemplate`): one would be silently dropped.
/// - TyphoonRestClient's `{name}`, anywhere (`issues/{issue_id}.json`),
///   filled from the parameter of that name, which is then used up; a
///   missing or `.null` one is `.missingPathParameter`.
///
/// Values are percent-encoded as path segments (`PercentEncoding.pathSegment`);
/// the template's literal text is taken as written (already encoded), with
/// characters a path cannot carry (a space, `"`, …) encoded.
struct PathTemplate {
    let template: String

    /// The filled path and the parameters no `{placeholder}` used.
    func fill(identifiers: [PocketParameterValue], parameters: [String: PocketParameterValue]) throws
        -> (path: String, unused: [String: PocketParameterValue]) {
        let bytes = Array(template.utf8)
        var unused = parameters
        var nextIdentifier = 0
        var segments: [String] = []
        var current = ""
        var removedSegment = false
        var i = 0

        func isNameByte(_ b: UInt8) -> Bool {
            PercentEncoding.isUnreserved(b) && b != UInt8(ascii: ".") && b != UInt8(ascii: "~") && b != UInt8(ascii: "-")
        }

        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "/") {
                if !(removedSegment && current.isEmpty) { segments.append(current) }
                current = ""
                removedSegment = false
                i += 1
            } else if b == UInt8(ascii: ":"), current.isEmpty, i + 1 < bytes.count, isNameByte(bytes[i + 1]) {
                var j = i + 1
                while j < bytes.count, isNameByte(bytes[j]) { j += 1 }
                let name = String(decoding: bytes[(i + 1)..<j], as: UTF8.self)
                let segmentEnds = j == bytes.count || bytes[j] == UInt8(ascii: "/")
                let text = nextIdentifier < identifiers.count
                    ? try Self.segment(identifiers[nextIdentifier], name: ":" + name) : ""
                if text.isEmpty, segmentEnds {
                    removedSegment = true
                } else {
                    current += text
                }
                nextIdentifier += 1
                i = j
            } else if b == UInt8(ascii: "{") {
                guard let close = bytes[i...].firstIndex(of: UInt8(ascii: "}")) else {
                    throw PocketError(.invalidPathTemplate, "unclosed '{' in path template '\(template)'")
                }
                let name = String(decoding: bytes[(i + 1)..<close], as: UTF8.self)
                guard !name.isEmpty else {
                    throw PocketError(.invalidPathTemplate, "empty '{}' in path template '\(template)'")
                }
                guard let value = parameters[name], !value.isNull else {
                    throw PocketError(.missingPathParameter,
                                      "path template '\(template)' needs a value for {\(name)}")
                }
                current += try Self.segment(value, name: "{\(name)}")
                unused[name] = nil
                i = close + 1
            } else {
                var j = i + 1
                while j < bytes.count, bytes[j] != UInt8(ascii: "/"), bytes[j] != UInt8(ascii: "{") { j += 1 }
                current += PercentEncoding.encodeLiteral(String(decoding: bytes[i..<j], as: UTF8.self),
                                                         allowed: PercentEncoding.isPathLiteral)
                i = j
            }
        }
        if !(removedSegment && current.isEmpty) { segments.append(current) }
        if identifiers.count > nextIdentifier {
            throw PocketError(.invalidPathTemplate,
                              "\(identifiers.count) identifiers for \(nextIdentifier) ':placeholders' in '\(template)'")
        }
        return (segments.joined(separator: "/"), unused)
    }

    /// A value as path text: scalars encoded, arrays comma-joined.
    static func segment(_ value: PocketParameterValue, name: String) throws -> String {
        switch value {
        case .string(let s): return PercentEncoding.pathSegment(s)
        case .integer(let n): return String(n)
        case .double(let d): return PercentEncoding.pathSegment(d.description)
        case .bool(let b): return b ? "true" : "false"
        case .null: return ""
        case .array(let elements):
            return try elements.filter { !$0.isNull }.map { try segment($0, name: name) }.joined(separator: ",")
        case .dictionary:
            throw PocketError(.invalidPathTemplate, "a dictionary cannot fill the path placeholder \(name)")
        }
    }
}
