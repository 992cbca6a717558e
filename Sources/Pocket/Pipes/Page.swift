#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One page of a pipe's list, with the way to its neighbours.
///
/// ```swift
/// var page = try await projects.firstPage(params: ["limit": 20])
/// while let next = try await page.next() { page = next }
/// // or
/// for try await page in projects.pages(params: ["limit": 20]) { show(page.items) }
/// ```
public struct PocketPage<Model: Codable & Sendable>: Sendable {
    /// The records on this page.
    public var items: [Model]
    /// The next page's URL, or nil on the last page.
    public var nextURL: URL?
    /// The previous page's URL, or nil on the first page.
    public var previousURL: URL?
    /// The response the page came in (status, headers, raw body).
    public var response: PocketResponse
    let pipe: PocketPipe<Model>

    init(items: [Model], next: URL?, previous: URL?, response: PocketResponse, pipe: PocketPipe<Model>) {
        self.items = items
        self.nextURL = next
        self.previousURL = previous
        self.response = response
        self.pipe = pipe
    }

    /// Reads the next page; nil when this is the last.
    public func next() async throws -> PocketPage? {
        guard let nextURL else { return nil }
        return try await pipe.readPage(at: nextURL)
    }

    /// Reads the previous page; nil when this is the first.
    public func previous() async throws -> PocketPage? {
        guard let previousURL else { return nil }
        return try await pipe.readPage(at: previousURL)
    }
}

/// A pipe's pages as an `AsyncSequence`, from the first page forward along
/// the next links; each page is read when the iteration asks for it.
/// A next link back to a page already read ends it with `.pagingLoop`.
public struct PocketPageSequence<Model: Codable & Sendable>: AsyncSequence, Sendable {
    /// One page of records.
    public typealias Element = PocketPage<Model>
    let pipe: PocketPipe<Model>
    let params: [String: PocketParameterValue]

    /// Reads one page per `next()`, along the next links.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let pipe: PocketPipe<Model>
        var params: [String: PocketParameterValue]?
        var upcoming: URL?
        var seen: Set<String> = []

        /// The next page; nil after the last (a page without a next link).
        public mutating func next() async throws -> PocketPage<Model>? {
            if let first = params {
                params = nil
                upcoming = try pipe.collectionURL(adding: first)
            }
            guard let url = upcoming else { return nil }
            upcoming = nil
            guard seen.insert(url.absoluteString).inserted else {
                throw PocketError(.pagingLoop, "the next link leads back to \(url.absoluteString), a page already read")
            }
            let page = try await pipe.readPage(at: url)
            upcoming = page.nextURL
            return page
        }
    }

    /// Starts at the first page.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(pipe: pipe, params: params) }
}

extension PocketPipe {
    /// The first page of the list, with `params` (nil: the configuration's
    /// `pageParameters`).
    public func firstPage(params: [String: PocketParameterValue]? = nil) async throws -> PocketPage<Model> {
        try await readPage(at: collectionURL(adding: params ?? configuration.pageParameters))
    }

    /// Every page, from the first (with `params`, nil: the configuration's
    /// `pageParameters`) along the next links.
    public func pages(params: [String: PocketParameterValue]? = nil) -> PocketPageSequence<Model> {
        PocketPageSequence(pipe: self, params: params ?? configuration.pageParameters)
    }
}

/// `Link` header fields (RFC 8288 §3): `<uri>; rel="next", <uri>; rel="prev"`.
///
/// Lenient the way a client must be: a malformed link-value is skipped up to
/// the next comma outside `<…>` and quotes, and never fails the response.
struct LinkHeader {
    struct Link: Equatable {
        /// The URI-Reference between `<` and `>`, as sent (may be relative).
        var target: String
        /// The `rel` relation types, lowercased (a `rel` may list several).
        var relations: [String]
    }

    /// Every link in `values` (each one `Link` field), in order.
    static func parse(_ values: [String]) -> [Link] {
        var links: [Link] = []
        for value in values {
            var s = Substring(value)
            while !s.isEmpty {
                if let link = parseOne(&s) { links.append(link) }
                skipToNextLinkValue(&s)
            }
        }
        return links
    }

    /// The target of the first link with relation `rel` (case-insensitive).
    static func target(rel: String, in values: [String]) -> String? {
        let rel = rel.lowercased()
        return parse(values).first { $0.relations.contains(rel) }?.target
    }

    private static func parseOne(_ s: inout Substring) -> Link? {
        skipSpace(&s)
        guard s.first == "<", let close = s.firstIndex(of: ">") else { return nil }
        let target = String(s[s.index(after: s.startIndex)..<close])
        s = s[s.index(after: close)...]
        var relations: [String] = []
        while true {
            skipSpace(&s)
            guard s.first == ";" else { break }
            s = s.dropFirst()
            skipSpace(&s)
            let name = s.prefix { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " && $0 != "\t" }
            s = s.dropFirst(name.count)
            skipSpace(&s)
            var value = ""
            if s.first == "=" {
                s = s.dropFirst()
                skipSpace(&s)
                value = quotedOrToken(&s)
            }
            if name.lowercased() == "rel", relations.isEmpty { // RFC 8288 §3.3: only the first rel counts
                relations = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { $0.lowercased() }
            }
        }
        return Link(target: target, relations: relations)
    }

    private static func quotedOrToken(_ s: inout Substring) -> String {
        guard s.first == "\"" else {
            let token = s.prefix { $0 != ";" && $0 != "," && $0 != " " && $0 != "\t" }
            s = s.dropFirst(token.count)
            return String(token)
        }
        s = s.dropFirst()
        var out = ""
        while let c = s.first {
            s = s.dropFirst()
            if c == "\"" { break }
            if c == "\\", let next = s.first {
                out.append(next)
                s = s.dropFirst()
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// Past the comma that ends this link-value (outside `<…>` and quotes).
    private static func skipToNextLinkValue(_ s: inout Substring) {
        var inURI = false, inQuotes = false
        while let c = s.first {
            s = s.dropFirst()
            if inQuotes {
                if c == "\\" { s = s.dropFirst() } else if c == "\"" { inQuotes = false }
            } else if inURI {
                if c == ">" { inURI = false }
            } else if c == "\"" {
                inQuotes = true
            } else if c == "<" {
                inURI = true
            } else if c == "," {
                return
            }
        }
    }

    private static func skipSpace(_ s: inout Substring) {
        s = s.drop { $0 == " " || $0 == "\t" }
    }
}
