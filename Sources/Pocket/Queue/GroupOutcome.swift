/// How one member of a group ended.
public enum PocketGroupMemberResult<Output: Sendable>: Sendable {
    /// It returned this.
    case success(Output)
    /// It threw this (not a cancellation).
    case failure(any Error)
    /// Cancelled (by `.cancelRest`, or the caller's cancellation).
    case cancelled
    /// Never started (a serial group stopped before it).
    case notStarted

    /// True for `.failure`.
    public var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }

    /// The output of a success.
    public var value: Output? {
        if case .success(let v) = self { return v }
        return nil
    }
}

/// Finished and total members of a group.
public struct PocketGroupProgress: Sendable, Hashable {
    /// Members completed so far.
    public var finished: Int
    /// Members in the group.
    public var total: Int
    /// `finished / total`; 1 for an empty group.
    public var fraction: Double { total == 0 ? 1 : Double(finished) / Double(total) }
}

/// What a group did.
public struct PocketGroupOutcome<Output: Sendable>: Sendable {
    /// One result per member, in the members' order.
    public var results: [PocketGroupMemberResult<Output>]
    /// Member indices in the order they completed.
    public var completionOrder: [Int] = []

    init(results: [PocketGroupMemberResult<Output>]) {
        self.results = results
    }

    mutating func record(_ result: PocketGroupMemberResult<Output>, at index: Int) {
        results[index] = result
        completionOrder.append(index)
    }

    /// True when every member succeeded (also for an empty group).
    public var succeeded: Bool { results.allSatisfy { $0.value != nil } }

    /// The error of the first member to fail, in completion order.
    public var firstError: (any Error)? {
        for index in completionOrder { if case .failure(let e) = results[index] { return e } }
        return nil
    }
}
