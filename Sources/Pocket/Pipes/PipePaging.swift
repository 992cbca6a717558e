/// Where a pipe finds the next and previous pages of a list (AeroGear's
/// `AGPageConfig` metadata locations).
public enum PocketPipePaging: Sendable, Hashable {
    /// RFC 8288 `Link` header fields: the targets of the links whose `rel`
    /// is `next` and `previous` (defaults `"next"` and `"prev"`; `"previous"`
    /// is also accepted for the latter). The default: it is the standard,
    /// used by GitHub's API among many.
    case linkHeader(next: String = "next", previous: String = "prev")
    /// Header fields of their own whose values are the page URLs (absolute,
    /// or relative like `?page=3`), e.g. AeroGear's `AG-Links-Next`.
    case headers(next: String, previous: String)
    /// Keys in a JSON object body (dot-separated paths such as
    /// `"paging.next"`). A value is a URL string (absolute or relative) or an
    /// object of query parameters to set on the current page's URL; null or
    /// missing means there is no such page. The records are the array at
    /// `items` (a key path; nil: the body itself is the array).
    case body(next: String, previous: String, items: String?)

    /// `Link` headers with `rel="next"` and `rel="prev"`.
    public static let `default` = PocketPipePaging.linkHeader()
}
