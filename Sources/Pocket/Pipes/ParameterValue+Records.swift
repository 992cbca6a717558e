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
