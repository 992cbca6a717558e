/// A handler for a task's events, limited to some states.
public struct PocketTaskObserver: Sendable {
    /// The states reported; every state by default.
    public var states: Set<PocketTaskState>
    /// Called synchronously in the task that changed state: keep it short and
    /// never block (hand work to another task).
    public var handler: @Sendable (PocketTaskEvent) -> Void

    /// Observes `states` (all by default) with `handler`.
    public init(states: Set<PocketTaskState> = Set(PocketTaskState.allCases), _ handler: @escaping @Sendable (PocketTaskEvent) -> Void) {
        self.states = states
        self.handler = handler
    }
}
