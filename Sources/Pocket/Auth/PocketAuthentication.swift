#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A user name and password for Basic or Digest authentication.
public struct PocketCredential: Sendable, Hashable, CustomStringConvertible {
    /// The user name, sent as is (Basic encodes `username:password` in Base64; Digest
    /// hashes it).
    public var username: String
    /// The password; `description` never shows it.
    public var password: String

    /// The credential of `username` with `password`.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// The user name only: the password is never printed.
    public var description: String { "\(username):…" }
}

/// How a request answers `401 Unauthorized` challenges (RFC 9110 §11.6.1):
/// with a credential, or with a handler that is asked for one
/// (AFNetworking's authentication challenge block).
///
/// ```swift
/// config.handling.authentication = PocketAuthentication(username: "ada", password: "s3cret",
///                                                       origin: URL(string: "https://api.example.com")!)
/// request.authentication = PocketAuthentication(schemes: [.digest]) { challenge in
///     try await vault.credential(for: challenge.realm)
/// }
/// ```
///
/// On a 401 whose `WWW-Authenticate` offers a scheme in `schemes`, the
/// request is sent once more with `Authorization` (Digest is chosen over
/// Basic, SHA-256 over MD5). The answer is a step of the one request path,
/// inside an attempt: middleware see the answered outcome, and it is not a
/// retry (no `.retrying` event, no attempt counted).
///
/// Safety:
/// - a credential is sent once per request: a second 401 to it is returned
///   as the response, not answered again (a Digest `stale=true`, which says
///   only the nonce expired, is answered once more with the new nonce);
/// - a credential goes only to its origin (scheme, host and port: one given
///   for https never goes over http), and only a 401 from the request's own
///   origin is answered (not one from where a redirect led);
/// - a one-shot body (a stream) cannot be sent again: the answer then fails
///   with `.bodyNotReplayable`.
///
/// Digest (RFC 7616): MD5, SHA-256 and their `-sess` variants, `qop=auth`
/// (or none, RFC 2069), a fresh client nonce per answer, and the nonce
/// count: a server nonce is kept per origin and used again,
/// counted, for the next requests (no extra round trip) until the server
/// says it is stale.
public struct PocketAuthentication: Sendable {
    /// An authentication scheme Pocket can answer.
    public enum Scheme: String, Sendable, Hashable, CaseIterable {
        /// RFC 7617: the password itself, base64-coded (use https).
        case basic = "Basic"
        /// RFC 7616: a hash of the password with the server's nonce.
        case digest = "Digest"
    }

    enum Source: Sendable {
        case credential(PocketCredential)
        case handler(@Sendable (PocketAuthChallenge) async throws -> PocketCredential?)
    }

    /// The schemes answered; Basic and Digest by default (curl's `--anyauth`).
    public var schemes: Set<Scheme>
    /// Where the credential may go: its scheme, host and port. Nil (the
    /// default): for a request's own authentication, the request URL's
    /// origin; for the client's, its `baseURL`'s origin, or, with no base
    /// URL, the origin of each request it sends (set it when the client
    /// talks to several hosts). A handler is asked only for challenges from here.
    public var origin: URL?
    /// Send Basic with the first request, before any challenge (curl's
    /// `--basic`), instead of waiting for a 401. Used only with a credential
    /// and when `schemes` contains `.basic`. False by default.
    public var preemptiveBasic: Bool
    let source: Source
    /// Digest nonces by origin and realm, shared by the copies of this value.
    let nonces = DigestNonces()

    /// Answers with this user name and password.
    public init(username: String, password: String, schemes: Set<Scheme> = Set(Scheme.allCases), origin: URL? = nil,
                preemptiveBasic: Bool = false) {
        self.init(credential: PocketCredential(username: username, password: password), schemes: schemes, origin: origin,
                  preemptiveBasic: preemptiveBasic)
    }

    /// Answers with `credential`.
    public init(credential: PocketCredential, schemes: Set<Scheme> = Set(Scheme.allCases), origin: URL? = nil,
                preemptiveBasic: Bool = false) {
        self.schemes = schemes
        self.origin = origin
        self.preemptiveBasic = preemptiveBasic
        self.source = .credential(credential)
    }

    /// Asks `handler` for a credential on each challenge (it may look one up,
    /// prompt, or return nil to let the 401 through). It is asked again after
    /// a refusal, with `challenge.refused` set; returning the refused
    /// credential again ends the exchange with the 401.
    public init(schemes: Set<Scheme> = Set(Scheme.allCases), origin: URL? = nil,
                handler: @escaping @Sendable (PocketAuthChallenge) async throws -> PocketCredential?) {
        self.schemes = schemes
        self.origin = origin
        self.preemptiveBasic = false
        self.source = .handler(handler)
    }
}

/// A 401 challenge (or a proxy's 407), as the handler of a
/// `PocketAuthentication` sees it.
public struct PocketAuthChallenge: Sendable {
    /// The URL that answered 401; for a proxy's challenge (`isProxy`), the
    /// proxy's own `http://host:port`.
    public var url: URL
    /// The scheme Pocket chose to answer (Digest over Basic).
    public var scheme: PocketAuthentication.Scheme
    /// The challenge's `realm`, if it has one.
    public var realm: String?
    /// The challenge's parameters, names lowercased (`realm`, `nonce`, `algorithm`, …).
    public var parameters: [String: String]
    /// The response that carried the challenge (its body is not kept).
    public var response: PocketResponseHead
    /// The credential this request already sent and the server refused;
    /// nil on the first challenge.
    public var refused: PocketCredential?
    /// True for a proxy's challenge: a `407 Proxy Authentication Required`
    /// (or a CONNECT refused with 401) from the proxy at `url`, asked of
    /// `PocketRequestHandling.proxyAuthentication`; the credential goes to
    /// that proxy only, as `Proxy-Authorization`. False for an origin's 401.
    public var isProxy = false
}
