// libFuzzer target: what the response cache and the retry loop read from a
// server: Cache-Control (CacheDirectives), Vary, Age, Expires, Date,
// Last-Modified, ETag (CacheRules: refusal, lifetime, age), the HTTP-date
// parser and Retry-After (RetryAfter).
//
// Input: header lines "Name: value" ("\n"-separated); byte 0 also picks the
// status and whether the request carries Authorization.
// Beyond "no crash":
//   - lifetime and age are never negative or NaN;
//   - a response to a request with Authorization is storable only when it
//     says public, must-revalidate or s-maxage (RFC 9111 §3.5); never with
//     no-store or Vary: *;
//   - an HTTP-date that parses names a real day, and formatted as an
//     IMF-fixdate it parses to the same instant (a round trip);
//   - Retry-After is never negative;
//   - the directives, lifetime, age and Retry-After of the headers are
//     parsed with at most a fixed amount plus a multiple of the input's size
//     allocated (allocationBounded).
import FuzzDriver
@testable import Pocket

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

func fail(_ message: String) -> Never {
    fatalError("FuzzCacheHeaders: \(message)")
}

let statuses = [200, 203, 204, 206, 300, 301, 304, 308, 404, 410, 500, 501]
let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

/// An IMF-fixdate of `seconds` since 1970 (independent of the parser).
func imfFixdate(_ seconds: Int) -> String {
    let (d, s) = (seconds.quotientAndRemainder(dividingBy: 86_400))
    let civil = CivilDate.date(daysSinceEpoch: d)
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return "\(days[((d % 7) + 7) % 7]), \(two(civil.day)) \(months[civil.month - 1]) \(civil.year) "
        + "\(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60)) GMT"
}

@_cdecl("FuzzCacheHeaders_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data in
        guard let first = data.first else { return }
        var headers = PocketHeaders()
        for line in String(decoding: data.dropFirst(), as: UTF8.self).split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon]), value = line[line.index(after: colon)...].trimmingSpaces
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { continue }
            headers.add(name: name, value: value)
        }
        // What the cache and the retry loop parse, measured apart from the checks.
        _ = allocationBounded("the cache headers", inputBytes: data.count) {
            let directives = CacheDirectives(headers)
            let lifetime = CacheRules.lifetime(headers, directives: directives, status: 200, heuristic: true,
                                               responseTime: 1_700_000_000)
            let age = CacheRules.age(headers, requestTime: 1_699_999_999, responseTime: 1_700_000_000, now: 1_700_000_005)
            let waits = headers.map { RetryAfter.delay($0.value, now: Date(timeIntervalSince1970: 1_700_000_000)) }
            return (directives, lifetime, age, waits)
        }
        let status = statuses[Int(first & 0x0F) % statuses.count]
        var request = PocketRequest(method: .get, url: URL(string: "https://example.com/r")!)
        if first & 0x10 != 0 { request.headers["Authorization"] = "Bearer t" }
        let directives = CacheDirectives(headers)
        let head = PocketResponseHead(status: status, reason: "", headers: headers)
        let refusal = CacheRules.refusal(request: request, requestDirectives: CacheDirectives(PocketHeaders()), response: head,
                                         directives: directives, heuristic: first & 0x20 != 0)
        if refusal == nil {
            if directives.has("no-store") { fail("no-store stored") }
            if headers.values(for: "Vary").contains(where: { $0.contains("*") }) { fail("Vary: * stored") }
            if first & 0x10 != 0, !(directives.has("public") || directives.has("must-revalidate") || directives.has("s-maxage")) {
                fail("an authenticated request's response stored without leave (RFC 9111 §3.5)")
            }
        }
        let now = 1_700_000_000.0
        let lifetime = CacheRules.lifetime(headers, directives: directives, status: status, heuristic: true, responseTime: now)
        if lifetime.isNaN || lifetime < 0 { fail("lifetime \(lifetime)") }
        let age = CacheRules.age(headers, requestTime: now - 1, responseTime: now, now: now + 5)
        if age.isNaN || age < 0 { fail("age \(age)") }
        for value in headers.map(\.value) {
            if let date = RetryAfter.httpDate(value) {
                let t = date.timeIntervalSince1970
                guard t == t.rounded(), t >= 0, t < 1e15 else { fail("\(value.debugDescription) → \(t)") }
                let again = imfFixdate(Int(t))
                // An IMF-fixdate names its day: the parsed instant is that day (no 31 Feb).
                let parts = value.split(whereSeparator: { $0 == " " || $0 == "," })
                if parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]),
                   let month = months.firstIndex(where: { $0.lowercased() == parts[2].lowercased() }) {
                    let leap = value.contains(":60 ") ? 1 : 0 // a leap second reads as the next day's 00:00:00
                    let civil = CivilDate.date(daysSinceEpoch: (Int(t) - leap) / 86_400)
                    guard civil.day == day, civil.month == month + 1 else { fail("\(value.debugDescription) is not a real day: \(again)") }
                }
                guard RetryAfter.httpDate(again)?.timeIntervalSince1970 == t else {
                    fail("\(value.debugDescription) → \(t) → \(again) does not round trip")
                }
            }
            if let wait = RetryAfter.delay(value, now: Date(timeIntervalSince1970: now)), wait < .zero {
                fail("Retry-After \(value.debugDescription) → \(wait)")
            }
        }
    }
}
