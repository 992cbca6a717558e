/// Several operations run as one unit (STNetTaskQueue's `STNetTaskGroup`,
/// AFNetworking's batches): serially or concurrently, with progress as
/// finished/total. The group completes only after every member has
/// completed; an empty group completes at once.
///
/// ```swift
/// let group = PocketRequestGroup(mode: .concurrent(onError: .cancelRest), requests: requests, client: client)
/// let outcome = await group.run { progress in print("\(progress.finished)/\(progress.total)") }
/// if let error = outcome.firstError { ... }
/// ```
///
/// Members are closures, so a group can hold endpoint calls, queued
/// requests (`{ try await queue.send(r) }`) or anything else that can fail.
public struct PocketRequestGroup<Output: Sendable>: Sendable {
    /// How members run.
    public enum Mode: Sendable, Hashable {
        /// One after another, in order; the first error stops the group
        /// (later members are `.notStarted`).
        case serial
        /// All at once; on the first error, either cancel the others or let
        /// them finish (`ErrorPolicy`).
        case concurrent(onError: ErrorPolicy)
    }

    /// What a concurrent group does when a member fails.
    public enum ErrorPolicy: Sendable, Hashable {
        /// Cancel the members still running (they end `.cancelled`).
        case cancelRest
        /// Let every member run to its own outcome.
        case collectAll
    }

    /// One member: any async throwing work.
    public typealias Member = @Sendable () async throws -> Output

    /// The mode given at init.
    public let mode: Mode
    let members: [Member]

    /// A group of `members` run in `mode`.
    public init(mode: Mode, members: [Member]) {
        self.mode = mode
        self.members = members
    }

    /// Runs the members. `progress` is called after each member completes
    /// (in completion order, never concurrently). Cancelling the calling
    /// task cancels the members.
    public func run(progress: (@Sendable (PocketGroupProgress) -> Void)? = nil) async -> PocketGroupOutcome<Output> {
        var outcome = PocketGroupOutcome<Output>(results: Array(repeating: .notStarted, count: members.count))
        guard !members.isEmpty else { return outcome }
        switch mode {
        case .serial:
            for (index, member) in members.enumerated() {
                let result = await Self.result(of: member)
                outcome.record(result, at: index)
                progress?(PocketGroupProgress(finished: outcome.completionOrder.count, total: members.count))
                if case .success = result { continue }
                break
            }
        case .concurrent(let policy):
            await withTaskGroup(of: (Int, PocketGroupMemberResult<Output>).self) { group in
                for (index, member) in members.enumerated() {
                    group.addTask { (index, await Self.result(of: member)) }
                }
                var cancelled = false
                for await (index, result) in group {
                    outcome.record(result, at: index)
                    progress?(PocketGroupProgress(finished: outcome.completionOrder.count, total: members.count))
                    if policy == .cancelRest, !cancelled, result.isFailure {
                        cancelled = true
                        group.cancelAll()
                    }
                }
            }
        }
        return outcome
    }

    private static func result(of member: Member) async -> PocketGroupMemberResult<Output> {
        if Task.isCancelled { return .cancelled }
        do {
            return .success(try await member())
        } catch let error as PocketError where error.code == .cancelled {
            return .cancelled
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .failure(error)
        }
    }
}

extension PocketRequestGroup where Output == PocketResponse {
    /// A group sending `requests` with `client` (through its pipeline).
    public init(mode: Mode, requests: [PocketRequest], client: PocketClient) {
        self.init(mode: mode, members: requests.map { request in { try await client.send(request) } })
    }

    /// A group sending `requests` through `queue` (its caps apply).
    public init(mode: Mode, requests: [PocketRequest], queue: PocketRequestQueue) {
        self.init(mode: mode, members: requests.map { request in { try await queue.send(request) } })
    }
}

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
