extension PocketError.Code {
    // Redirects (Swift layer); each error carries the 3xx head as `response`.
    /// More redirects than `PocketRedirectPolicy.maxHops`.
    public static let tooManyRedirects = PocketError.Code("too_many_redirects")
    /// A redirect leads back to a method and URL already requested in the chain.
    public static let redirectLoop = PocketError.Code("redirect_loop")
    /// A redirect from `https` to `http`, refused unless `allowsInsecureDowngrade`.
    public static let insecureRedirect = PocketError.Code("insecure_redirect")
    /// A `Location` that is not a URL, or not an `http`/`https` one.
    public static let badRedirectLocation = PocketError.Code("bad_redirect_location")
}
