#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The authentication step of the one request path: inside an attempt,
// around the cache step, redirects and hops (stage 2 of
// PocketClient+Execute.swift). It runs only for a request with an
// `authentication` (its own or the client's); others go straight to the hop.

extension PocketClient {
    /// Most answers one request makes: a Digest exchange takes one, a stale
    /// nonce one more, a handler that offers another credential after a
    /// refusal a few more.
    static let maxAuthenticationRounds = 4

    /// Sends `request` (the cache step, redirects, hops: `fetching`) and answers a 401 challenge as its
    /// `PocketAuthentication` says (see there for the rules). `request`
    /// becomes the request last sent: with the `Authorization` that answered
    /// the challenge, so that the response's `request` is what was sent.
    nonisolated(nonsending) func authenticating<D: ResponseDelivery>(
        _ original: inout PocketRequest, progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        let request = original
        guard let auth = request.authentication ?? configuration.handling.authentication else {
            return try await fetching(request, progress: progress, delivery)
        }
        let home = auth.origin ?? (request.authentication != nil ? request.url : configuration.baseURL ?? request.url)
        guard Self.sameOrigin(home, request.url) else { return try await fetching(request, progress: progress, delivery) }
        let target = request.target
        let originKey = "\(target.https ? "https" : "http")://\(target.host.lowercased()):\(target.port)"
        let method = request.method.rawValue, uri = target.pathAndQuery

        var sent = request
        defer { original = sent }
        var answers = ChallengeAnswers()
        if case .credential(let credential) = auth.source {
            // A nonce this protection space gave before: answer at once, counted.
            if auth.schemes.contains(.digest), let (challenge, nc) = auth.nonces.next(origin: originKey),
               let value = challenge.answer(credential, method: method, uri: uri, nc: nc, cnonce: DigestChallenge.makeCNonce()) {
                sent.headers["Authorization"] = value
                answers.sent(credential, .digest, preemptive: true)
            } else if auth.preemptiveBasic, auth.schemes.contains(.basic) {
                sent.headers["Authorization"] = try PocketAuthorization.basic(username: credential.username,
                                                                             password: credential.password).headerValue
                answers.sent(credential, .basic, preemptive: true)
            }
        }
        var rounds = 0
        while true {
            let response = try await fetching(sent, progress: progress, delivery)
            let view = response.attemptView
            guard view.status == 401, rounds < Self.maxAuthenticationRounds else { return response }
            // Only a challenge from the request's own origin, not from where a redirect led.
            if let url = Self.respondingURL(response), !Self.sameOrigin(url, request.url) { return response }
            guard let chosen = ChosenChallenge(view.headers.values(for: "WWW-Authenticate"), schemes: auth.schemes) else {
                return response
            }
            let credential: PocketCredential
            do {
                let url = Self.respondingURL(response) ?? request.url
                guard let c = try await answers.credential(for: chosen, from: auth.source,
                                                           view: { chosen.view(url: url, response: view.head, refused: $0) })
                else { return response }
                credential = c
            } catch {
                await response.discardBody()
                throw error
            }
            if let body = request.body, !body.isReplayable {
                await response.discardBody()
                throw PocketError(.bodyNotReplayable, "\(request.method) \(request.url.absoluteString) got a 401 \(chosen.scheme.rawValue) challenge to answer, but its body is one-shot (a stream) and was already sent",
                                  response: view.head)
            }
            let value: String?
            if let digest = chosen.digest {
                auth.nonces.store(digest, origin: originKey)
                value = digest.answer(credential, method: method, uri: uri, nc: 1, cnonce: DigestChallenge.makeCNonce())
            } else {
                do {
                    value = try PocketAuthorization.basic(username: credential.username, password: credential.password).headerValue
                } catch {
                    await response.discardBody()
                    throw error
                }
            }
            // The hash is unavailable (MD5 under FIPS): the 401 stands.
            guard let value else { return response }
            await response.discardBody()
            sent.headers["Authorization"] = value
            answers.sent(credential, chosen.scheme)
            rounds += 1
        }
    }

    /// Where a response came from (after redirects), when it records it.
    static func respondingURL<R: ExchangedResponse>(_ response: R) -> URL? {
        (response as? PocketResponse)?.url ?? (response as? PocketStreamingResponse)?.url
    }
}
