/// Where a value sits in a JSON tree, written as TyphoonRestClient writes it:
/// `root.issues[1].category`.
public struct PocketSchemaPath: Sendable, Hashable, CustomStringConvertible {
    /// One step down: a dictionary key or an array index.
    public enum Component: Sendable, Hashable {
        /// A dictionary key.
        case key(String)
        /// An array index, from 0.
        case index(Int)
    }

    /// From the root down.
    public var components: [Component]

    /// A path; no components is the root.
    public init(_ components: [Component] = []) { self.components = components }

    /// `root`, then `.key` and `[index]` per component.
    public var description: String {
        var s = "root"
        for c in components {
            switch c {
            case let .key(k): s += "." + k
            case let .index(i): s += "[\(i)]"
            }
        }
        return s
    }

    func appending(_ c: Component) -> PocketSchemaPath { PocketSchemaPath(components + [c]) }
}
