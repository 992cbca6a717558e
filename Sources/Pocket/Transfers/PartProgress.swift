/// How far the part of a multipart upload that is being sent has come
/// (`PocketTransferProgress.part`).
///
/// Parts go out in order: every part before `index` is complete when this
/// is reported. Reports are rate-limited like the totals, so a small part
/// may pass between two reports without one of its own.
public struct PocketPartProgress: Sendable, Hashable, CustomStringConvertible {
    /// The part's position in the form, from 0.
    public var index: Int
    /// The number of parts in the form.
    public var count: Int
    /// The part's field name.
    public var name: String
    /// Content bytes of the part sent so far (its head not counted).
    public var bytes: Int
    /// The part's content size, or nil for a stream without length.
    public var total: Int?

    /// A report as Pocket makes it (public for tests and adapters that
    /// build progress values of their own).
    public init(index: Int, count: Int, name: String, bytes: Int, total: Int?) {
        self.index = index
        self.count = count
        self.name = name
        self.bytes = bytes
        self.total = total
    }

    /// True once every byte of the part's content is out.
    public var isComplete: Bool { total.map { bytes >= $0 } ?? false }

    /// `part 2/4 "photo": 1048576 of 5242880 bytes`.
    public var description: String {
        "part \(index + 1)/\(count) \"\(name)\": \(bytes)" + (total.map { " of \($0)" } ?? "") + " bytes"
    }
}
