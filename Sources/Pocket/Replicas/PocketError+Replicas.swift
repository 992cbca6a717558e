extension PocketError.Code {
    /// Every replica of the set the request addresses is ejected (or the
    /// plain origin's breaker is open: `Configuration.originEjection`): the
    /// request fails at once instead of waiting for a timeout. The message
    /// names the set or origin and when the first replica is due back.
    public static let circuitOpen = PocketError.Code("circuit_open")
    /// The replica set the request addresses has no replicas: its list is
    /// empty, or a discovered set had none within the connect timeout (the
    /// message says why discovery failed, when it did).
    public static let noReplicas = PocketError.Code("no_replicas")
}
