import Pocket
import Tracing

/// The `ServiceContext` key of a request deadline (`PocketDeadline`), for
/// services that carry their request-scoped values in a `ServiceContext`
/// (swift-distributed-tracing, swift-service-context). `PocketTracingMiddleware`
/// applies the deadline of `ServiceContext.current` to each request it sees
/// (`PocketMiddlewareContext.deadline`); `PocketDeadline.current` applies
/// without it.
///
/// ```swift
/// var context = ServiceContext.current ?? .topLevel
/// context.pocketDeadline = .now + .milliseconds(200)
/// try await ServiceContext.withValue(context) { try await client.send(request) }
/// ```
public enum PocketDeadlineKey: ServiceContextKey {
    /// The deadline: an instant of the continuous clock.
    public typealias Value = ContinuousClock.Instant
    /// `pocket-deadline`: the key's name in a context's description.
    public static var nameOverride: String? { "pocket-deadline" }
}

extension ServiceContext {
    /// The deadline of the requests made under this context; nil (the
    /// default) for none.
    public var pocketDeadline: ContinuousClock.Instant? {
        get { self[PocketDeadlineKey.self] }
        set { self[PocketDeadlineKey.self] = newValue }
    }
}
