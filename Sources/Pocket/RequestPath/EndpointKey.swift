#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A task's endpoint key (`PocketTaskEvent.endpoint`): named by the
/// caller, or its URL's path, made only when read (most requests' keys are
/// never read: no observer listens by endpoint). Holds the URL, not the
/// request: an event kept by its reader keeps no request body alive.
enum EndpointKey: Sendable {
    case named(String)
    /// The path of the task's URL (`TaskFields.url`), worked out when read:
    /// most tasks never read it, and a second reference to the URL here
    /// cost a retain and a release per request.
    case path
}
