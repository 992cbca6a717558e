#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketClient {
    /// The one same-origin rule (RFC 6454), for every step that asks: the
    /// redirect follower (credentials and cookies stay on their origin),
    /// authentication (a challenge is answered only on the credential's
    /// origin) and the cache (which URLs an unsafe method invalidates).
    ///
    /// Scheme, host (case-insensitive) and port equal, default ports filled
    /// in; for `http+unix`/`https+unix`, the same socket path too (every
    /// socket's origin host is "localhost", so the host alone would join
    /// them). A URL Pocket cannot send to (`Target.problem`: no host, an
    /// unknown scheme) has no origin: it is the same origin as nothing.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        let x = Target(a), y = Target(b)
        return x.problem == nil && y.problem == nil && x.https == y.https && x.port == y.port
            && x.host.lowercased() == y.host.lowercased() && x.unixPath == y.unixPath
    }
}
