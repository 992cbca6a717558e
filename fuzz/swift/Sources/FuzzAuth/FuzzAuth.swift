// libFuzzer target: the WWW-Authenticate / Proxy-Authenticate challenge
// parser (AuthChallenge), the choice among challenges (ChosenChallenge)
// and the Digest answer (DigestChallenge, RFC 7616).
//
// Input: the field values, one per "\n" (a response may carry several).
// Beyond "no crash":
//   - a chosen Digest challenge's answer, with a fixed credential, parses
//     back (as an auth-param list) to the realm, nonce, opaque and uri it
//     was computed for: the quoting round trip holds;
//   - the answer holds no CR, LF or NUL when the challenge held none;
//   - parsing the challenges and choosing one allocate at most a fixed
//     amount plus a multiple of the input's size (allocationBounded);
//   - the Digest nonce kept for one origin is never offered to another
//     (DigestNonces: a challenge is answered only for its own origin).
import FuzzDriver
@testable import Pocket

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

func fail(_ message: String) -> Never {
    fatalError("FuzzAuth: \(message)")
}

let credential = PocketCredential(username: "Mufasa", password: "Circle of Life")
let uri = "/dir/index.html?a=\"b\""

@_cdecl("FuzzAuth_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data in
        let (values, all) = allocationBounded("AuthChallenge.parse", inputBytes: data.count) {
            let values = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
            return (values, AuthChallenge.parse(values))
        }
        for c in all where c.scheme.isEmpty { fail("a challenge without a scheme: \(c)") }
        for schemes in [Set<PocketAuthentication.Scheme>([.digest, .basic]), [.basic], [.digest]] {
            let chosen = allocationBounded("ChosenChallenge", inputBytes: data.count) { ChosenChallenge(values, schemes: schemes) }
            guard let chosen else { continue }
            if !schemes.contains(chosen.scheme) { fail("\(chosen.scheme) chosen from \(schemes)") }
            guard let digest = chosen.digest else { continue }
            guard let answer = digest.answer(credential, method: "GET", uri: uri, nc: 1, cnonce: "0a4f113b") else { continue }
            let clean = !values.joined().utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
            if clean, answer.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                fail("a control byte in the answer: \(answer.debugDescription)")
            }
            guard clean else { continue }
            let back = AuthChallenge.parse([answer])
            guard back.count == 1, back[0].scheme == "digest" else { fail("the answer does not parse: \(answer.debugDescription) → \(back)") }
            let p = back[0].parameters
            if p["realm"] != digest.realm || p["nonce"] != digest.nonce || p["opaque"] != digest.opaque || p["uri"] != uri {
                fail("the answer's fields do not round trip: \(answer.debugDescription) → \(p)")
            }
            let nonces = DigestNonces()
            nonces.store(digest, origin: "https://a.example:443")
            if nonces.next(origin: "https://b.example:443") != nil || nonces.next(origin: "http://a.example:443") != nil {
                fail("a nonce of one origin was offered to another")
            }
            guard nonces.next(origin: "https://a.example:443") != nil else { fail("the origin's own nonce was lost") }
        }
    }
}
