extension PocketError.Code {
    /// A `PocketStubTransport` has no canned response for the request's method and path.
    public static let stubNotFound = PocketError.Code("stub_not_found")
    /// A `PocketTokenRefreshMiddleware`'s refresh closure threw; `underlying` is its error.
    public static let tokenRefreshFailed = PocketError.Code("token_refresh_failed")
    /// A token refresh would start while one is being made by the same task
    /// (the refresh request itself was rejected): a refresh loop, stopped.
    public static let tokenRefreshLoop = PocketError.Code("token_refresh_loop")
}
