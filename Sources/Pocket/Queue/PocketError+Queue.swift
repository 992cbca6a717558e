extension PocketError.Code {
    /// A `PocketRequestQueue` with `maxPending` set already holds that many
    /// pending requests; this one was not queued.
    public static let queueFull = PocketError.Code("queue_full")
}
