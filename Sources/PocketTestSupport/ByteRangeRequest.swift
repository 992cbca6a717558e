/// A `Range` header field value (RFC 9110 §14.2) resolved against a
/// representation of `size` bytes. Only one range of unit `bytes` is
/// supported: anything else is ignored, as the RFC allows.
enum ByteRangeRequest: Equatable {
    /// Ignore the field: send the whole representation (200).
    case ignored
    /// Send these bytes (206).
    case satisfiable(Range<Int>)
    /// No byte of the representation is in the range (416).
    case unsatisfiable

    init(_ value: String, size: Int) {
        let text = value.trimmingSpaces()
        guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else {
            self = .ignored
            return
        }
        let spec = text.dropFirst("bytes=".count).trimmingSpaces()
        guard let dash = spec.firstIndex(of: "-") else {
            self = .ignored
            return
        }
        let first = String(spec[..<dash]), last = String(spec[spec.index(after: dash)...])
        switch (Self.number(first), Self.number(last)) {
        case let (start?, nil) where last.isEmpty: // bytes=N-
            self = start < size ? .satisfiable(start..<size) : .unsatisfiable
        case let (start?, end?) where end >= start: // bytes=N-M
            self = start < size ? .satisfiable(start..<min(end + 1, size)) : .unsatisfiable
        case let (nil, suffix?) where first.isEmpty: // bytes=-S: the last S bytes
            self = suffix > 0 && size > 0 ? .satisfiable(max(0, size - suffix)..<size) : .unsatisfiable
        default:
            self = .ignored
        }
    }

    /// A non-empty run of ASCII digits as a number, else nil.
    private static func number(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text)
    }
}
