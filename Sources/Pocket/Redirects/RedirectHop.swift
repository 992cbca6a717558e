#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One redirect that was followed, as listed in `PocketResponse.redirects`.
public struct PocketRedirectHop: Sendable, Hashable {
    /// The redirect's status (301, 302, 303, 307 or 308).
    public var status: Int
    /// The URL that answered with it.
    public var from: URL
    /// The URL requested next.
    public var to: URL
    /// The method of the request sent to `to` (GET after a 303, …).
    public var method: PocketMethod
}
