#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One challenge of a `WWW-Authenticate` field (RFC 9110 §11.6.1, §11.2):
/// `scheme` lowercased, parameters by lowercased name, or a token68.
struct AuthChallenge: Sendable, Hashable {
    var scheme: String
    var parameters: [String: String] = [:]
    var token68: String?

    /// Every challenge in `values` (one field may hold several, and a
    /// response may carry several fields). A malformed rest of a field is
    /// dropped; what came before it is kept.
    static func parse(_ values: [String]) -> [AuthChallenge] {
        var all: [AuthChallenge] = []
        for value in values {
            var scanner = Scanner(Array(value.utf8))
            scanner.challenges(into: &all)
        }
        return all
    }

    /// The scanner of one field value.
    private struct Scanner {
        let bytes: [UInt8]
        var i = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { i >= bytes.count }
        var current: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func skipSpaces() {
            while let c = current, c == 0x20 || c == 0x09 { i += 1 }
        }

        mutating func skipSpacesAndCommas() {
            while let c = current, c == 0x20 || c == 0x09 || c == UInt8(ascii: ",") { i += 1 }
        }

        /// A token (RFC 9110 §5.6.2): visible ASCII except delimiters.
        static func isTokenByte(_ c: UInt8) -> Bool {
            guard c > 0x20, c < 0x7F else { return false }
            return !"\"(),/:;<=>?@[\\]{}".utf8.contains(c)
        }

        mutating func token() -> String? {
            let start = i
            while let c = current, Self.isTokenByte(c) || c == UInt8(ascii: "/") && start < i { i += 1 }
            return i > start ? String(decoding: bytes[start..<i], as: UTF8.self) : nil
        }

        /// A quoted-string's content, with `\` escapes undone; nil when unterminated.
        mutating func quoted() -> String? {
            guard current == UInt8(ascii: "\"") else { return nil }
            i += 1
            var out: [UInt8] = []
            while let c = current {
                i += 1
                if c == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
                if c == UInt8(ascii: "\\") {
                    guard let next = current else { return nil }
                    out.append(next)
                    i += 1
                } else {
                    out.append(c)
                }
            }
            return nil
        }

        mutating func challenges(into all: inout [AuthChallenge]) {
            while true {
                skipSpacesAndCommas()
                if atEnd { return }
                guard let scheme = token() else { return }
                var challenge = AuthChallenge(scheme: scheme.lowercased())
                skipSpaces()
                // token68 (`Negotiate abc==`) or auth-params (`realm="x", nonce=y`).
                let mark = i
                if let t = token() {
                    var equals = 0
                    while current == UInt8(ascii: "=") { equals += 1; i += 1 }
                    skipSpaces()
                    if atEnd || current == UInt8(ascii: ",") {
                        if equals != 1 || atEnd {
                            // Alone up to the end or a comma: a token68.
                            challenge.token68 = t + String(repeating: "=", count: equals)
                            all.append(challenge)
                            continue
                        }
                    }
                }
                i = mark
                guard params(into: &challenge) else {
                    all.append(challenge)
                    return
                }
                all.append(challenge)
            }
        }

        /// Reads `name=value` pairs until the next challenge or the end;
        /// false when the field is malformed from here on.
        mutating func params(into challenge: inout AuthChallenge) -> Bool {
            while true {
                skipSpacesAndCommas()
                if atEnd { return true }
                let mark = i
                guard let name = token() else { return false }
                skipSpaces()
                guard current == UInt8(ascii: "=") else {
                    // A token with no `=`: the next challenge's scheme.
                    i = mark
                    return true
                }
                i += 1
                skipSpaces()
                let value: String?
                if current == UInt8(ascii: "\"") { value = quoted() } else { value = token() }
                guard let value else { return false }
                challenge.parameters[name.lowercased()] = value
                skipSpaces()
                guard atEnd || current == UInt8(ascii: ",") else { return false }
            }
        }
    }
}

/// The challenge a request answers among those of a 401's
/// `WWW-Authenticate` (or a proxy's `Proxy-Authenticate`): Digest over
/// Basic, SHA-256 over MD5, among the schemes it may use.
struct ChosenChallenge {
    /// The challenge as received (its parameters, for a handler).
    var challenge: AuthChallenge
    /// Set when Digest was chosen.
    var digest: DigestChallenge?
    var scheme: PocketAuthentication.Scheme { digest != nil ? .digest : .basic }

    /// Nil when none of `fieldValues`' challenges can be answered with `schemes`.
    init?(_ fieldValues: [String], schemes: Set<PocketAuthentication.Scheme>) {
        let all = AuthChallenge.parse(fieldValues)
        let digests = schemes.contains(.digest) ? all.compactMap { c in DigestChallenge(c).map { (c, $0) } } : []
        if let pick = digests.first(where: { $0.1.hash == .sha256 }) ?? digests.first {
            (challenge, digest) = (pick.0, pick.1)
        } else if schemes.contains(.basic), let basic = all.first(where: { $0.scheme == "basic" }) {
            (challenge, digest) = (basic, nil)
        } else {
            return nil
        }
    }

    /// The challenge as a handler sees it.
    func view(url: URL, response: PocketResponseHead, refused: PocketCredential?, isProxy: Bool = false) -> PocketAuthChallenge {
        PocketAuthChallenge(url: url, scheme: scheme, realm: challenge.parameters["realm"], parameters: challenge.parameters,
                            response: response, refused: refused, isProxy: isProxy)
    }
}

/// One request's answers to challenges (an origin's 401s, or a proxy's
/// 407s): what it sent, and what was refused, with `PocketAuthentication`'s
/// rules — a refused credential is not sent again; a Digest answer whose
/// nonce went stale is sent once more with the new nonce.
struct ChallengeAnswers {
    /// The credential in the last request sent, and its scheme.
    var used: PocketCredential?
    var usedScheme: PocketAuthentication.Scheme?
    /// `used` went before any challenge (Basic up front, a kept Digest nonce).
    var preemptive = false
    var refused: [PocketCredential] = []
    var staleAnswered = false

    /// The credential answering `chosen` from `source` (a handler is shown
    /// `view(refused)`), or nil when none may be sent: the challenge stands.
    mutating func credential(for chosen: ChosenChallenge, from source: PocketAuthentication.Source,
                             view: (PocketCredential?) -> PocketAuthChallenge) async throws -> PocketCredential? {
        if let used, let digest = chosen.digest, digest.stale, usedScheme == .digest, !staleAnswered {
            // Only the nonce expired (RFC 7616 §3.3): the same credential, once more.
            staleAnswered = true
            return used
        }
        // A credential sent before any challenge counts as refused only when
        // it was the answer the challenge asks for (Basic to Basic); a kept
        // Digest nonce may simply have been forgotten by the server.
        if let used, !preemptive || (usedScheme == .basic && chosen.scheme == .basic) { refused.append(used) }
        preemptive = false
        let offered: PocketCredential?
        switch source {
        case .credential(let c): offered = c
        case .handler(let handler): offered = try await handler(view(refused.last))
        }
        guard let offered, !refused.contains(offered) else { return nil }
        return offered
    }

    /// `credential` went with `scheme`, in answer to a challenge (or up front: `preemptive`).
    mutating func sent(_ credential: PocketCredential, _ scheme: PocketAuthentication.Scheme, preemptive: Bool = false) {
        (used, usedScheme) = (credential, scheme)
        if preemptive { self.preemptive = true }
    }
}

/// A Digest challenge Pocket can answer: its algorithm and qop checked.
struct DigestChallenge: Sendable {
    var realm: String
    var nonce: String
    var opaque: String?
    var hash: DigestHash
    /// `-sess`: the session variant of the algorithm (RFC 7616 §3.4.2).
    var session: Bool
    /// The algorithm as the server named it, echoed back.
    var algorithmName: String?
    /// `qop=auth` offered; false for an RFC 2069 challenge with no qop.
    var qopAuth: Bool
    var stale: Bool

    /// Nil when Pocket cannot answer it: no nonce, an unknown algorithm, or
    /// a qop list without `auth` (`auth-int` alone).
    init?(_ c: AuthChallenge) {
        guard c.scheme == "digest", let nonce = c.parameters["nonce"] else { return nil }
        let algorithm = c.parameters["algorithm"]
        switch algorithm?.uppercased() ?? "MD5" {
        case "MD5": (hash, session) = (.md5, false)
        case "MD5-SESS": (hash, session) = (.md5, true)
        case "SHA-256": (hash, session) = (.sha256, false)
        case "SHA-256-SESS": (hash, session) = (.sha256, true)
        default: return nil
        }
        if let qop = c.parameters["qop"] {
            let offered = qop.split(separator: ",").map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard offered.contains("auth") else { return nil }
            qopAuth = true
        } else {
            qopAuth = false
        }
        self.realm = c.parameters["realm"] ?? ""
        self.nonce = nonce
        self.opaque = c.parameters["opaque"]
        self.algorithmName = algorithm
        self.stale = c.parameters["stale"]?.lowercased() == "true"
    }

    /// The `Authorization` value answering this challenge for `method` and
    /// `uri` (the request target as sent) with nonce count `nc`
    /// (RFC 7616 §3.4); nil when the hash is unavailable.
    func answer(_ credential: PocketCredential, method: String, uri: String, nc: Int, cnonce: String) -> String? {
        guard var ha1 = hash.hex("\(credential.username):\(realm):\(credential.password)") else { return nil }
        if session { ha1 = hash.hex("\(ha1):\(nonce):\(cnonce)") ?? "" }
        guard let ha2 = hash.hex("\(method):\(uri)") else { return nil }
        let count = String(nc, radix: 16)
        let ncText = String(repeating: "0", count: max(0, 8 - count.count)) + count
        let response = qopAuth ? hash.hex("\(ha1):\(nonce):\(ncText):\(cnonce):auth:\(ha2)") : hash.hex("\(ha1):\(nonce):\(ha2)")
        guard let response else { return nil }
        var fields: [String] = []
        if credential.username.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            fields.append("username=\(Self.quote(credential.username))")
        } else {
            // RFC 7616 §3.4.4: a user name outside ASCII goes as username* (RFC 8187).
            fields.append("username*=UTF-8''\(PercentEncoding.encode(credential.username))")
        }
        fields.append("realm=\(Self.quote(realm))")
        fields.append("nonce=\(Self.quote(nonce))")
        fields.append("uri=\(Self.quote(uri))")
        if let algorithmName { fields.append("algorithm=\(algorithmName)") }
        if qopAuth {
            fields.append("qop=auth")
            fields.append("nc=\(ncText)")
            fields.append("cnonce=\(Self.quote(cnonce))")
        }
        fields.append("response=\(Self.quote(response))")
        if let opaque { fields.append("opaque=\(Self.quote(opaque))") }
        return "Digest " + fields.joined(separator: ", ")
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for c in s {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }

    /// A client nonce: 16 random bytes in hex.
    static func makeCNonce() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let s = String(g.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }.joined()
    }
}

/// Digest nonces in use, by origin, with their counts: a later request to
/// the same origin answers at once with the next count.
final class DigestNonces: Sendable {
    struct Entry: Sendable {
        var challenge: DigestChallenge
        var count: Int
    }

    struct State {
        var entries: [String: Entry] = [:]
        /// Origins, least recently stored first.
        var order: [String] = []
    }

    /// At most this many origins are kept (the oldest goes).
    static let limit = 64
    private let state = Lock(State())

    /// The challenge last seen for `origin` and its next nonce count, counted as used.
    func next(origin: String) -> (DigestChallenge, Int)? {
        state.withLock { s in
            guard var entry = s.entries[origin] else { return nil }
            entry.count += 1
            s.entries[origin] = entry
            return (entry.challenge, entry.count)
        }
    }

    /// Records a fresh `challenge` for `origin`: its nonce is at count 1.
    func store(_ challenge: DigestChallenge, origin: String) {
        state.withLock { s in
            s.order.removeAll { $0 == origin }
            s.order.append(origin)
            s.entries[origin] = Entry(challenge: challenge, count: 1)
            if s.order.count > Self.limit { s.entries[s.order.removeFirst()] = nil }
        }
    }
}
