#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How `301`, `302`, `303`, `307` and `308` responses with a `Location` are
/// followed: by the client (`PocketClient.Configuration.redirects`) or for one
/// request (`PocketRequest.redirects`, which wins when set).
///
/// The default follows up to 10 hops, as URLSession, AsyncHTTPClient and
/// `curl -L` users expect of a library: a moved API answers instead of
/// handing every caller a 3xx to chase. Each hop follows RFC 9110 §15.4:
///
/// - 301 and 302 turn POST into GET and drop the body; 303 turns every
///   method but HEAD into GET and drops the body; 307 and 308 keep the method
///   and the body (a replayable one: a stream body that was already sent is
///   `.bodyNotReplayable`).
/// - `Authorization`, `Proxy-Authorization` and `Cookie` are removed when a
///   hop leaves the origin (scheme, host, port), so credentials never reach a
///   host they were not meant for.
/// - `https` → `http` is refused (`.insecureRedirect`) unless
///   `allowsInsecureDowngrade`.
/// - A relative `Location` is resolved against the URL that answered.
/// - A request that comes back to a method and URL already sent in the chain
///   is `.redirectLoop`; more than `maxHops` is `.tooManyRedirects`.
///
/// ```swift
/// var request = try PocketRequest("http://127.0.0.1:8080/old")
/// request.redirects = PocketRedirectPolicy { redirect in
///     redirect.request.url.host() == "127.0.0.1" ? .follow : .stop
/// }
/// let response = try await client.send(request)
/// print(response.url!, response.redirects.count)
/// ```
///
/// Equality and `Codable` cover the settings, not the hook (a closure can be
/// neither compared nor archived): two policies are equal when their settings
/// are and both have a hook or both have none, and a decoded policy has none.
public struct PocketRedirectPolicy: Sendable, Hashable, Codable {
    /// Follow redirects at all. True by default (see above); false hands
    /// every 3xx back as the response.
    public var follows: Bool
    /// Most redirects followed for one request, 10 by default (enough for
    /// any sane chain, few enough to stop a runaway one fast). One more is
    /// `.tooManyRedirects`.
    public var maxHops: Int
    /// Allow a hop from `https` to `http`. False by default: the next request
    /// would travel in clear text, readable and changeable on the path.
    public var allowsInsecureDowngrade: Bool
    /// Decides each hop (AFNetworking's redirect response block): sees the 3xx
    /// head and the request Pocket means to send next, and answers `.follow`,
    /// `.modify(request)` or `.stop` (the 3xx is then the response). Runs
    /// before the safety checks, which still apply to what it returns. A
    /// thrown error fails the request with that error. Nil by default.
    public var onRedirect: (@Sendable (PocketRedirect) async throws -> PocketRedirectAction)?

    /// A policy that follows, with these settings.
    public init(maxHops: Int = 10, allowsInsecureDowngrade: Bool = false,
                onRedirect: (@Sendable (PocketRedirect) async throws -> PocketRedirectAction)? = nil) {
        self.follows = true
        self.maxHops = maxHops
        self.allowsInsecureDowngrade = allowsInsecureDowngrade
        self.onRedirect = onRedirect
    }

    /// Follows up to 10 hops, no downgrade, no hook: the client's default.
    public static let follow = PocketRedirectPolicy()

    /// Follows nothing: a 3xx is the response.
    public static let disabled: PocketRedirectPolicy = {
        var p = PocketRedirectPolicy()
        p.follows = false
        return p
    }()

    private enum CodingKeys: String, CodingKey { case follows, maxHops, allowsInsecureDowngrade }

    /// Decodes the settings; the hook is nil (a closure is not archived).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(maxHops: try c.decode(Int.self, forKey: .maxHops),
                  allowsInsecureDowngrade: try c.decode(Bool.self, forKey: .allowsInsecureDowngrade))
        follows = try c.decode(Bool.self, forKey: .follows)
    }

    /// Encodes the settings, not the hook.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(follows, forKey: .follows)
        try c.encode(maxHops, forKey: .maxHops)
        try c.encode(allowsInsecureDowngrade, forKey: .allowsInsecureDowngrade)
    }

    /// Equal settings, and a hook on both or on neither (closures cannot be compared).
    public static func == (a: PocketRedirectPolicy, b: PocketRedirectPolicy) -> Bool {
        a.follows == b.follows && a.maxHops == b.maxHops && a.allowsInsecureDowngrade == b.allowsInsecureDowngrade
            && (a.onRedirect == nil) == (b.onRedirect == nil)
    }

    /// Hashes the settings (consistent with `==`).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(follows)
        hasher.combine(maxHops)
        hasher.combine(allowsInsecureDowngrade)
    }
}

/// One redirect as the hook sees it.
public struct PocketRedirect: Sendable {
    /// The 3xx head (status, reason, headers with `Location`).
    public var response: PocketResponseHead
    /// The URL that answered with the redirect.
    public var from: URL
    /// The request Pocket will send next: `Location` resolved, method and
    /// body changed by the status, credentials removed on a cross-origin hop.
    public var request: PocketRequest
    /// 1 for the first redirect of the chain, 2 for the next, …
    public var hop: Int
}

/// What the redirect hook decides.
public enum PocketRedirectAction: Sendable {
    /// Send the request Pocket prepared.
    case follow
    /// Send this request instead (e.g. with a header added back).
    case modify(PocketRequest)
    /// Follow no further: the 3xx is the response.
    case stop
}

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
