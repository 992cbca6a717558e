/// An HTTP request method: the standard ones as constants, any other token
/// (`"PURGE"`, `"PROPFIND"`) through the string initializer.
///
/// Methods are case-sensitive (RFC 9110 §9.1); the engine rejects a method
/// that is empty or not a token before anything is sent.
public struct PocketMethod: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public static let get = PocketMethod("GET")
    public static let head = PocketMethod("HEAD")
    public static let post = PocketMethod("POST")
    public static let put = PocketMethod("PUT")
    public static let patch = PocketMethod("PATCH")
    public static let delete = PocketMethod("DELETE")
    public static let options = PocketMethod("OPTIONS")
    public static let trace = PocketMethod("TRACE")
    public static let connect = PocketMethod("CONNECT")

    /// Idempotent methods (RFC 9110 §9.2.2) may be retried automatically when a
    /// reused connection turns out to be closed before any response byte.
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": return true
        default: return false
        }
    }

    public var description: String { rawValue }
}
