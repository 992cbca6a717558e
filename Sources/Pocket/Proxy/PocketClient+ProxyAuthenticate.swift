#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The proxy step of the one request path: each hop that goes through an
// HTTP proxy (stage 5 of PocketClient+Execute.swift, inside redirects, since
// each hop may take another proxy or none) answers the proxy's 407 once, as
// `authenticating` answers an origin's 401:
//
// - a forwarded request (`http://`): the proxy's 407 (an error from the
//   engine bridge, or a streamed head) is answered with `Proxy-Authorization`
//   on the request sent again;
// - a CONNECT tunnel (`https://`): the engine reports the refused CONNECT's
//   status and challenge (`pk_proxy_challenge`, on the error's `response`),
//   and the request is submitted again with the answer as the CONNECT's
//   `Proxy-Authorization` (the tunnel is pooled under it).
//
// Credentials come from the proxy itself (its URL's user and password,
// which are also sent as Basic up front, as before) or, for a proxy without
// them, from `PocketRequestHandling.proxyAuthentication` (a credential or a
// handler, which sees `challenge.isProxy`). They go only to that proxy.
// Without usable credentials the 407 stays the `.proxyAuthenticationRequired`
// error naming the proxy.

extension PocketClient {
    /// `send`, answering a 407 (or a CONNECT's 401) from the hop's proxy.
    nonisolated(nonsending) func answeringProxy<R: ExchangedResponse>(
        _ request: PocketRequest, _ send: nonisolated(nonsending) (PocketRequest) async throws -> R
    ) async throws -> R {
        let target = request.target
        guard target.problem == nil, target.unixPath == nil, request.unixSocketPath == nil, configuration.unixSocketPath == nil,
              let proxy = try? ProxyRules.proxy(for: target, own: request.proxy, rules: proxies) else {
            return try await send(request)
        }
        // The proxy's own user and password (sent as Basic up front, by
        // ProxyRoute), else the client's proxyAuthentication.
        let source: PocketAuthentication.Source, schemes: Set<PocketAuthentication.Scheme>, identity: String
        var upFront: (PocketCredential, String?)?
        if let user = proxy.username {
            let own = PocketCredential(username: user, password: proxy.password ?? "")
            (source, schemes, identity) = (.credential(own), Set(PocketAuthentication.Scheme.allCases), "user \(user)\u{0}\(own.password)")
            upFront = (own, nil)
        } else if let auth = configuration.handling.proxyAuthentication, Self.accepts(auth, proxy) {
            (source, schemes, identity) = (auth.source, auth.schemes, "auth \(ObjectIdentifier(auth.nonces))")
            if auth.preemptiveBasic, auth.schemes.contains(.basic), case .credential(let c) = auth.source,
               let value = try? PocketAuthorization.basic(username: c.username, password: c.password).headerValue {
                upFront = (c, value)
            }
        } else {
            return try await send(request)
        }
        let tunnel = target.https
        let route = ProxyRoute(proxy, target: target)
        // What a Digest answer covers: the CONNECT's authority, or the
        // forwarded request's absolute-form target (RFC 7616 §3.4: the request-target).
        let method = tunnel ? "CONNECT" : request.method.rawValue
        let host = target.host.contains(":") ? "[\(target.host)]" : target.host
        let uri = tunnel ? "\(host):\(target.port)" : route.absoluteTarget ?? target.pathAndQuery
        let key = "\(proxy.host.lowercased()):\(proxy.port) \(tunnel ? "tunnel" : "forward") \(identity)"

        var sent = request
        var answers = ChallengeAnswers()
        func answer(_ value: String) {
            sent.proxyAnswer = ProxyAnswer(host: proxy.host, port: proxy.port, value: value)
            if !tunnel { sent.headers.remove("Proxy-Authorization") }
        }
        if let (value, credential, scheme) = proxyAnswers.next(key: key, method: method, uri: uri) {
            // This proxy accepted an answer before: send it (or the next
            // Digest count) at once, without waiting for a 407.
            answer(value)
            answers.sent(credential, scheme, preemptive: true)
        } else if let (credential, value) = upFront {
            if let value { answer(value) }
            answers.sent(credential, .basic, preemptive: true)
        }
        var rounds = 0
        while true {
            let head: PocketResponseHead
            let refusal: PocketError
            do {
                let response = try await send(sent)
                let view = response.attemptView
                guard !tunnel, view.status == 407 else {
                    if let answered = sent.proxyAnswer, let used = answers.used, let scheme = answers.usedScheme {
                        proxyAnswers.accepted(key: key, value: answered.value, credential: used, scheme: scheme, replay: tunnel)
                    }
                    return response
                }
                // A streamed head (a collected one is an error already): the
                // forwarding proxy's own 407.
                await response.discardBody()
                head = view.head
                refusal = PocketError(.proxyAuthenticationRequired, "proxy \(proxy.address) answered 407: "
                                      + (ProxyRoute(proxy, target: target, answer: sent.proxyAnswer).authorization == nil
                                         ? "it wants credentials" : "it refused the credentials"), response: head)
            } catch let error as PocketError where error.code == .proxyAuthenticationRequired && error.response != nil {
                head = error.response!
                refusal = error
            }
            proxyAnswers.forget(key: key)
            guard rounds < Self.maxAuthenticationRounds,
                  let chosen = ChosenChallenge(head.headers.values(for: head.status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"),
                                               schemes: schemes),
                  let credential = try await answers.credential(for: chosen, from: source, view: {
                      chosen.view(url: Self.url(of: proxy), response: head, refused: $0, isProxy: true)
                  }) else { throw refusal }
            if let body = request.body, !body.isReplayable {
                throw PocketError(.bodyNotReplayable, "\(request.method) \(request.url.absoluteString) got a \(head.status) \(chosen.scheme.rawValue) challenge from proxy \(proxy.address) to answer, but its body is one-shot (a stream) and was already sent",
                                  underlying: refusal, response: head)
            }
            let value: String?
            if let digest = chosen.digest {
                value = digest.answer(credential, method: method, uri: uri, nc: 1, cnonce: DigestChallenge.makeCNonce())
                if value != nil, !tunnel { proxyAnswers.store(digest: digest, credential: credential, key: key) }
            } else {
                value = try PocketAuthorization.basic(username: credential.username, password: credential.password).headerValue
            }
            // The hash is unavailable (MD5 under FIPS): the 407 stands.
            guard let value else { throw refusal }
            answer(value)
            answers.sent(credential, chosen.scheme)
            rounds += 1
        }
    }

    /// Whether `auth` may answer `proxy`: its `origin`, when set, names the proxy.
    private static func accepts(_ auth: PocketAuthentication, _ proxy: PocketProxy) -> Bool {
        guard let origin = auth.origin else { return true }
        guard let named = try? PocketProxy(origin.absoluteString) else { return false }
        return named.host.lowercased() == proxy.host.lowercased() && named.port == proxy.port
    }

    /// `http://host:port` of `proxy`, as a handler sees it.
    static func url(of proxy: PocketProxy) -> URL {
        URL(string: "http://\(proxy.address)") ?? URL(string: "http://localhost")!
    }
}

/// The answers proxies accepted, per proxy, kind of hop and credential
/// source, so that later requests send them at once (no 407 round trip):
/// a CONNECT's answer is sent again as it was (the tunnel is pooled under
/// its `Proxy-Authorization`, so an equal value finds the pooled tunnel);
/// a forwarded request's Digest answer is made anew with the next nonce count.
final class ProxyAnswers: Sendable {
    enum Entry: Sendable {
        case value(String, PocketCredential, PocketAuthentication.Scheme)
        case digest(DigestChallenge, PocketCredential, count: Int)
    }

    struct State {
        var entries: [String: Entry] = [:]
        /// Keys, least recently stored first.
        var order: [String] = []
    }

    /// At most this many are kept (the oldest goes).
    static let limit = 64
    private let state = Lock(State())

    /// The answer to send at once for `key`, the credential in it and its scheme.
    func next(key: String, method: String, uri: String) -> (String, PocketCredential, PocketAuthentication.Scheme)? {
        let entry: Entry? = state.withLock { s in
            guard let entry = s.entries[key] else { return nil }
            if case .digest(let challenge, let credential, let count) = entry {
                s.entries[key] = .digest(challenge, credential, count: count + 1)
                return .digest(challenge, credential, count: count + 1)
            }
            return entry
        }
        switch entry {
        case nil: return nil
        case .value(let value, let credential, let scheme)?: return (value, credential, scheme)
        case .digest(let challenge, let credential, let count)?:
            guard let value = challenge.answer(credential, method: method, uri: uri, nc: count, cnonce: DigestChallenge.makeCNonce())
            else { return nil }
            return (value, credential, .digest)
        }
    }

    /// The proxy accepted `value`: kept to be sent as it is (a CONNECT's,
    /// or any Basic one); a forwarded Digest answer's nonce is already stored.
    func accepted(key: String, value: String, credential: PocketCredential, scheme: PocketAuthentication.Scheme, replay: Bool) {
        guard replay || scheme == .basic else { return }
        put(.value(value, credential, scheme), key: key)
    }

    /// A fresh Digest `challenge` answered with `credential` (count 1).
    func store(digest challenge: DigestChallenge, credential: PocketCredential, key: String) {
        put(.digest(challenge, credential, count: 1), key: key)
    }

    /// The proxy refused what was kept for `key`.
    func forget(key: String) {
        state.withLock { s in
            s.entries[key] = nil
            s.order.removeAll { $0 == key }
        }
    }

    private func put(_ entry: Entry, key: String) {
        state.withLock { s in
            s.order.removeAll { $0 == key }
            s.order.append(key)
            s.entries[key] = entry
            if s.order.count > Self.limit { s.entries[s.order.removeFirst()] = nil }
        }
    }
}
