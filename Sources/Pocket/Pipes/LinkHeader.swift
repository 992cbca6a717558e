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
