/// Identifies a registered endpoint observer, for removal.
public struct PocketObserverToken: Sendable, Hashable {
    let id: UInt64
}
