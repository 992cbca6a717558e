import Pocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FetchCommand {
    /// `-u user:password` with `--basic` (curl's default: Basic with the
    /// first request), `--digest` (answer a Digest challenge) or `--anyauth`
    /// (answer whichever scheme the 401 offers, Digest first). The
    /// credential goes to the URL's origin only, never where a redirect leads.
    func authentication() throws(CLIFailure) -> PocketAuthentication? {
        let schemes = [basic, digest, anyauth].filter { $0 }.count
        guard let user else {
            if schemes > 0 { throw CLIFailure(.usage, "--basic, --digest and --anyauth need -u user:password") }
            return nil
        }
        if schemes > 1 { throw CLIFailure(.usage, "give one of --basic, --digest and --anyauth") }
        guard let colon = user.firstIndex(of: ":") else {
            throw CLIFailure(.usage, "-u needs user:password (pocket does not prompt for a password)")
        }
        let name = String(user[..<colon]), password = String(user[user.index(after: colon)...])
        guard !name.isEmpty else { throw CLIFailure(.usage, "-u '\(name):…': the user name is empty") }
        if digest { return PocketAuthentication(username: name, password: password, schemes: [.digest]) }
        if anyauth { return PocketAuthentication(username: name, password: password) }
        // Basic checks its input at once: a bad name is a usage error, not a request.
        do {
            _ = try PocketAuthorization.basic(username: name, password: password)
        } catch {
            throw CLIFailure(.usage, "-u: \((error as? PocketError)?.message ?? "\(error)")")
        }
        return PocketAuthentication(username: name, password: password, schemes: [.basic], preemptiveBasic: true)
    }

    /// The proxy's credential (`--proxy-user`, or the user and password of
    /// `-x`'s URL) as `--proxy-basic` (curl's default: Basic with the first
    /// request), `--proxy-digest` or `--proxy-anyauth` say; it answers that
    /// proxy's 407 only (forwarded requests and CONNECT alike).
    func proxyAuthentication(_ credential: PocketCredential, proxy: PocketProxy) throws(CLIFailure) -> PocketAuthentication {
        let origin = URL(string: "http://\(proxy.address)")
        if proxyDigest { return PocketAuthentication(credential: credential, schemes: [.digest], origin: origin) }
        if proxyAnyauth { return PocketAuthentication(credential: credential, origin: origin) }
        do {
            _ = try PocketAuthorization.basic(username: credential.username, password: credential.password)
        } catch {
            throw CLIFailure(.usage, "--proxy-user: \((error as? PocketError)?.message ?? "\(error)")")
        }
        return PocketAuthentication(credential: credential, schemes: [.basic], origin: origin, preemptiveBasic: true)
    }

    /// `--location-trusted` (curl's): the fields a cross-origin redirect
    /// removes that go to every hop anyway — the `Authorization` of `-u`
    /// (Basic) or `-H`, and the `Cookie` of `-H` or `-b`. A Digest challenge
    /// from another origin is still not answered: the credential's nonce
    /// belongs to the first origin.
    func trustedFields(_ request: PocketRequest) -> [(String, String)] {
        guard locationTrusted else { return [] }
        var kept: [(String, String)] = []
        if let user, !digest, !anyauth, let colon = user.firstIndex(of: ":"),
           let basic = try? PocketAuthorization.basic(username: String(user[..<colon]),
                                                      password: String(user[user.index(after: colon)...])) {
            kept.append(("Authorization", basic.headerValue))
        } else if let value = request.headers["Authorization"] {
            kept.append(("Authorization", value))
        }
        if let cookie = request.headers["Cookie"] { kept.append(("Cookie", cookie)) }
        return kept
    }
}
