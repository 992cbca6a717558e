#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The value of an `Authorization` header, built by one of the schemes the
/// seeds used. Each constructor checks its input and throws
/// `.invalidCredentials` instead of sending a header the server would misread.
///
/// ```swift
/// request.headers.authorize(try .basic(username: "ada", password: "s3cret"))
/// var template = PocketRequestTemplate(); template.headers.authorize(try .bearer(token))
/// ```
///
/// `user:password@` in a URL also becomes Basic authorization (done when the
/// request is sent, unless the request has its own `Authorization`).
public struct PocketAuthorization: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The header value, e.g. `Basic YWRhOnMzY3JldA==`.
    public let headerValue: String

    /// An `Authorization` value used as it is (after the CR/LF/NUL check).
    public init(headerValue: String) throws {
        guard !headerValue.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
            throw PocketError(.invalidCredentials, "an Authorization value cannot contain CR, LF or NUL")
        }
        self.headerValue = headerValue
    }

    /// RFC 7617 Basic: base64 of `username:password` in UTF-8 (the charset
    /// RFC 7617 §2.1 lets servers announce, and what every current server
    /// assumes). A username containing `:` cannot be sent (the server would
    /// split it there), nor control characters.
    public static func basic(username: String, password: String) throws -> PocketAuthorization {
        guard !username.contains(":") else {
            throw PocketError(.invalidCredentials, "a Basic username cannot contain ':' (RFC 7617 §2)")
        }
        guard !(username + password).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw PocketError(.invalidCredentials, "Basic credentials cannot contain control characters (RFC 7617 §2)")
        }
        return try PocketAuthorization(headerValue: "Basic " + Data("\(username):\(password)".utf8).base64EncodedString())
    }

    /// RFC 6750 Bearer: `Bearer TOKEN`. The token must be a b64token
    /// (letters, digits, `-._~+/`, then `=` padding).
    public static func bearer(_ token: String) throws -> PocketAuthorization {
        var bytes = Substring(token).utf8[...]
        while bytes.last == UInt8(ascii: "=") { bytes = bytes.dropLast() }
        guard !bytes.isEmpty, bytes.allSatisfy({ PercentEncoding.isUnreserved($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }) else {
            throw PocketError(.invalidCredentials, "a Bearer token must be a non-empty b64token (RFC 6750 §2.1)")
        }
        return try PocketAuthorization(headerValue: "Bearer " + token)
    }

    /// Rails' `Token token="…"` (`authenticate_with_http_token`); `"` and `\`
    /// in the token are escaped as a quoted-string (RFC 9110 §5.6.4).
    public static func token(_ token: String) throws -> PocketAuthorization {
        guard !token.isEmpty else { throw PocketError(.invalidCredentials, "an empty token") }
        var escaped = ""
        for c in token {
            if c == "\"" || c == "\\" { escaped.append("\\") }
            escaped.append(c)
        }
        return try PocketAuthorization(headerValue: "Token token=\"\(escaped)\"")
    }

    /// The scheme only (`Basic …`): the secret is never printed.
    public var description: String {
        // Never print the secret: scheme only.
        (headerValue.split(separator: " ").first.map(String.init) ?? "") + " …"
    }
}

extension PocketHeaders {
    /// Sets `Authorization` (replacing any).
    public mutating func authorize(_ authorization: PocketAuthorization) {
        self["Authorization"] = authorization.headerValue
    }

    /// Headers holding only `Authorization: Basic …`, as MTPocket's
    /// `headerDictionaryForBasicAuthWithUsername:password:`.
    public static func basicAuthorization(username: String, password: String) throws -> PocketHeaders {
        ["Authorization": try PocketAuthorization.basic(username: username, password: password).headerValue]
    }
}
