#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// URL and body building for pipes: just what they need, until the api
/// branch's request building is merged.
// TODO(merge): use the api branch's URL resolution, query encoding and JSON bodies.
enum PipeRequests {
    /// `base` joined with `path` by exactly one slash.
    static func join(_ base: URL, _ path: String) -> URL? {
        var b = base.absoluteString
        while b.hasSuffix("/") { b.removeLast() }
        let p = path.drop { $0 == "/" }
        return URL(string: p.isEmpty ? b : b + "/" + p)
    }

    /// RFC 3986 unreserved characters stay; every other byte is %XX.
    static func percentEncoded(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = String(b, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// `url` with `params` set in its query (sorted by name; a name already
    /// in the query is replaced).
    static func url(_ url: URL, setting params: [String: String]) -> URL {
        guard !params.isEmpty, var c = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        var items = (c.percentEncodedQueryItems ?? []).filter { item in
            !params.keys.contains { percentEncoded($0) == item.name }
        }
        for (name, value) in params.sorted(by: { $0.key < $1.key }) {
            items.append(URLQueryItem(name: percentEncoded(name), value: percentEncoded(value)))
        }
        c.percentEncodedQueryItems = items
        return c.url ?? url
    }

    static func jsonBody<T: Encodable>(_ value: T) throws -> Data {
        do {
            return try JSONEncoder().encode(value)
        } catch {
            throw PocketError(PocketError.Code("encoding_failed"), "cannot encode \(T.self) as JSON: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data, response: Response) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw PocketError(PocketError.Code("decoding_failed"), "the response to \(response.url?.absoluteString ?? "the request") is not a JSON \(T.self): \(error)",
                              response: ResponseHead(status: response.status, reason: response.reason, headers: response.headers))
        }
    }
}
