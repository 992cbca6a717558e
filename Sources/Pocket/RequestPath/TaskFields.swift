#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The fields of a task's events that do not change from one to the next.
/// They live in the task's `PocketMiddlewareContext`, which its events
/// reference (one object per request for both).
struct TaskFields {
    var taskID: UInt64
    var method: PocketMethod
    var url: URL
    var endpoint: EndpointKey
    var metadata: (any Sendable)?

    /// The endpoint key as events and middleware read it.
    var endpointValue: String {
        switch endpoint {
        case .named(let name): name
        case .path: url.path(percentEncoded: false)
        }
    }
}

extension PocketMiddlewareContext {
    /// A task's identity for events made outside the request path (a
    /// queue's pending and cancelled tasks).
    convenience init(identity fields: TaskFields) {
        self.init(fields: fields, clock: nil, started: .zero)
    }

    /// A copy with `change` made (an event's setter: events share the original).
    func with(_ change: (inout TaskFields) -> Void) -> PocketMiddlewareContext {
        var fields = self.fields
        change(&fields)
        return PocketMiddlewareContext(identity: fields)
    }
}
