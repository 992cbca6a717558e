#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The URLs a pipe sends to, built with the request-building helpers.
enum PipeRequests {
    /// `url` with `params` added to its query (`encoding`); with `replacing`,
    /// fields of the same names already there are dropped first (a body's
    /// `{"page": 3}` moves the current page's `page=2`).
    static func url(_ url: URL, adding params: [String: PocketParameterValue], encoding: PocketQueryEncoding,
                    replacing: Bool = false) throws -> URL {
        let query = encoding.encode(params)
        guard !query.isEmpty else { return url }
        var kept: [Substring] = []
        if let existing = url.query(percentEncoded: true), !existing.isEmpty {
            let names = params.keys.map { PercentEncoding.encode($0) }
            kept = existing.split(separator: "&").filter { field in
                guard replacing else { return true }
                let name = field.prefix { $0 != "=" }
                return !names.contains { name == $0 || name.hasPrefix($0 + "%5B") || name.hasPrefix($0 + "[") }
            }
        }
        var c = URLComponents(url: url, resolvingAgainstBaseURL: true)
        c?.percentEncodedQuery = (kept.map(String.init) + [query]).joined(separator: "&")
        guard let result = c?.url else { throw PocketError(.invalidURL, "cannot add \(query) to \(url.absoluteString)") }
        return result
    }
}
