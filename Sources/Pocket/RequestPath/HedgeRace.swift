#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One hedged request in flight (PocketClient+Hedge.swift): the request
/// itself, run in place by the calling task (`HedgedDelivery` lets the race
/// cancel its engine request); the hedges, each a task of its own, started
/// when the client's timer (`HedgeTimers`) says the delay passed; and the
/// first acceptable answer. A request answered before its delay costs this
/// object, a timer armed and disarmed, and a few lock steps: no task, sleep
/// or continuation.
///
/// Runner 0 is the request, runner n its n-th hedge. The race settles on the
/// first acceptable answer (the others are cancelled: their connections are
/// closed, never pooled), or on the last answer when none was acceptable and
/// no hedge may follow. A non-fatal answer with nothing else running sends
/// the next hedge at once, as the timer would.
final class HedgeRace<D: ResponseDelivery>: HedgeTimer, @unchecked Sendable {
    // Unchecked: `state` is read and written under its lock only,
    // `timerSlot` under the client's `HedgeTimers` lock only; every other
    // field is set at init. An answer is handed from the runner that got
    // it to the caller once, through `state`.
    typealias Arrival = (runner: Int, outcome: Result<D.Response, any Error>)

    private struct State {
        var settled = false
        /// The answer the race settled on, for the caller to take (kept
        /// only when it is not the caller's own answer).
        var result: Held?
        /// The last unacceptable answer, the result when none is acceptable.
        var last: Held?
        var hedges = 0
        /// Runners not yet answered (the request itself included).
        var running = 1
        /// The request's engine request of its current hop, cancelled when a hedge wins.
        var primary: InFlightRequest?
        var primaryCancelled = false
        /// The hedges' tasks (and the request's, through a transport).
        var tasks: [Task<Void, Never>] = []
        /// The caller, waiting for the result while hedges run.
        var waiter: UnsafeContinuation<Void, Never>?
    }

    private let state = Lock(making: State.init)
    var timerSlot = -1

    private let client: PocketClient
    private let request: PocketRequest
    private let box: HedgingPolicyBox
    /// The hedging delay, in nanoseconds.
    private let delayNanos: Int64
    /// When a hedge armed now is due (nanoseconds after `PocketDeadline.origin`).
    private var nextDue: Int64 {
        let (due, overflow) = PocketDeadline.nowNanos().addingReportingOverflow(delayNanos)
        return overflow ? .max : due
    }
    /// The task deadline, in nanoseconds after `PocketDeadline.origin` (`.max`: none).
    private let deadline: Int64
    private let attempt: Int
    private let sink: EventSink?
    private let progress: PocketProgressHandler?
    private let delivery: D
    private let validated: Bool
    private let priority: TaskPriority

    init(client: PocketClient, request: PocketRequest, policy: HedgingPolicyBox, delayNanos: Int64,
         deadline: Int64, attempt: Int, sink: EventSink?, progress: PocketProgressHandler?, delivery: D) {
        self.client = client
        self.request = request
        self.box = policy
        self.delayNanos = delayNanos
        self.deadline = deadline
        self.attempt = attempt
        self.sink = sink
        self.progress = progress
        self.delivery = delivery
        validated = request.validation != nil || client.configuration.validation != nil
        priority = Task.currentPriority
    }

    /// The runner whose answer the race returned (0: the request itself);
    /// set by the caller's task before `run` or `runDetached` returns, read
    /// by it after.
    private(set) var winner = 0

    /// The request itself run in place by the caller: the timer armed, the
    /// request sent, and the race's result (waited for while hedges run).
    /// An acceptable answer to the request itself, before any hedge's (the
    /// common case), is returned as it is: no `Result` made, stored or
    /// copied.
    nonisolated(nonsending) func run() async throws -> D.Response {
        client.hedgeTimers.arm(self, atNanos: nextDue)
        let response: D.Response
        do {
            response = try await client.fetching(request, progress: progress, HedgedDelivery(base: delivery, race: self))
        } catch {
            return try await settled(after: .failure(error))
        }
        if wins(response), let after = settledInPlace() {
            carryOut(after)
            if let discarded = after.discard { await discarded.response.discardBody() }
            return response
        }
        return try await settled(after: .success(response))
    }

    /// The request and its hedges all as tasks of their own (a request
    /// through a `PocketTransport`, whose call only the task's cancellation
    /// can end): the race's result.
    nonisolated(nonsending) func runDetached() async throws -> D.Response {
        client.hedgeTimers.arm(self, atNanos: nextDue)
        start(0, request)
        return try await taken(result())
    }

    /// The request's own answer when it did not settle the race at once:
    /// the race's result (this answer, or a hedge's, waited for).
    @inline(never)
    nonisolated(nonsending) private func settled(after outcome: Result<D.Response, any Error>) async throws -> D.Response {
        let after = answered(0, outcome, inPlace: true)
        carryOut(after)
        if let discarded = after.discard { await discarded.response.discardBody() }
        if after.mine { return try outcome.get() }
        return try await taken(result())
    }

    /// `arrival`'s outcome, its runner the winner.
    private func taken(_ arrival: Arrival) throws -> D.Response {
        winner = arrival.runner
        return try arrival.outcome.get()
    }

    /// The request's own acceptable answer settles the race when nothing
    /// settled it before (nil: a hedge's answer did).
    private func settledInPlace() -> After? {
        state.withLock { s in
            guard !s.settled else { return nil }
            var after = After()
            s.running -= 1
            settle(&s, accepting: 0, &after)
            return after
        }
    }

    // MARK: the engine request of the request itself (HedgedDelivery)

    /// The request's hop made `inflight`: cancelled at once when a hedge
    /// has won already, else kept to cancel when one does.
    func register(_ inflight: InFlightRequest) {
        state.withLock { s in
            if s.primaryCancelled { inflight.cancel() } else { s.primary = inflight }
        }
    }

    /// The hop ended: `inflight` is no longer cancelled by the race (it may
    /// be reused for another request now).
    func unregister(_ inflight: InFlightRequest) {
        state.withLock { s in
            if s.primary === inflight { s.primary = nil }
        }
    }

    // MARK: the race

    /// The delay passed: the next hedge, when the request or a hedge still
    /// runs and the policy, the deadline and the budget allow one.
    func fire() {
        let hedge = state.withLock { s in !s.settled && s.running > 0 ? nextHedge(&s) : nil }
        if let hedge { launch(hedge) }
    }

    /// The caller's result: at once when settled, else when the race settles
    /// (or the caller is cancelled: then every runner is).
    nonisolated(nonsending) private func result() async -> Arrival {
        await withCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let settled = state.withLock { s in
                    if s.settled { return true }
                    s.waiter = continuation
                    return false
                }
                if settled { continuation.resume() }
            }
            return state.withLock { $0.result!.arrival }
        } onCancel: {
            cancelAll()
        }
    }

    /// An answer kept in the state (the result for the caller to take, or
    /// the last unacceptable one): boxed, so that the state (made for every
    /// race) stays small; kept only when a hedge ran.
    private final class Held {
        let arrival: Arrival
        init(_ arrival: Arrival) { self.arrival = arrival }
    }

    /// A loser's response whose body is to be dropped: boxed, so that an
    /// `After` (made for every answer) stays a few words, not a response.
    private final class Discarded {
        let response: D.Response
        init(_ response: D.Response) { self.response = response }
    }

    /// What an answer leaves to do once the lock is released.
    private struct After {
        /// The race settled on this answer, and it stays the caller's (not stored).
        var mine = false
        var settledNow = false
        var waiter: UnsafeContinuation<Void, Never>?
        var cancel: [Task<Void, Never>] = []
        var discard: Discarded?
        var hedge: Int?
    }

    /// Runner `n`'s answer; `inPlace`: the caller's own (it takes the
    /// result from here when the race settles on it).
    private func answered(_ n: Int, _ outcome: Result<D.Response, any Error>, inPlace: Bool = false) -> After {
        let acceptable = wins(outcome)
        // An unacceptable answer once the deadline has passed ends the race
        // on it: the other runners share the deadline, so none can answer
        // in time, and the caller does not wait for each of them to be
        // scheduled to report its own failure.
        let expired = !acceptable && deadline != .max && PocketDeadline.nowNanos() >= deadline
        return state.withLock { s in
            var after = After()
            s.running -= 1
            if s.settled {
                // A loser's answer (cancelled, or later than the winner).
                if case .success(let response) = outcome { after.discard = Discarded(response) }
            } else if acceptable {
                settle(&s, accepting: n, &after)
                if inPlace { after.mine = true } else { s.result = Held((n, outcome)) }
            } else {
                if s.running == 0, !expired { after.hedge = nextHedge(&s) }
                if case .success(let response)? = s.last?.arrival.outcome { after.discard = Discarded(response) }
                if s.running > 0, !expired {
                    // Others run on (or the next hedge went at once): this
                    // answer is the result if none better comes.
                    s.last = Held((n, outcome))
                } else {
                    // None acceptable and none may follow (or the deadline
                    // passed): the last answer is the result.
                    s.last = nil
                    settle(&s, n, &after)
                    if inPlace { after.mine = true } else { s.result = Held((n, outcome)) }
                }
            }
            return after
        }
    }

    /// The race ends on runner `winner`'s acceptable answer: an
    /// unacceptable one kept before it is dropped.
    private func settle(_ s: inout State, accepting winner: Int, _ after: inout After) {
        if case .success(let response)? = s.last?.arrival.outcome { after.discard = Discarded(response) }
        s.last = nil
        settle(&s, winner, &after)
    }

    /// The race ends on runner `winner`'s answer: the caller woken, every
    /// other runner cancelled.
    private func settle(_ s: inout State, _ winner: Int, _ after: inout After) {
        s.settled = true
        after.settledNow = true
        after.waiter = s.waiter.take()
        after.cancel = s.tasks
        s.tasks = []
        if winner != 0 {
            // Under the lock: the hop's engine request cannot be recycled
            // for another request meanwhile (`unregister` waits for it).
            s.primaryCancelled = true
            s.primary?.cancel()
            s.primary = nil
        }
    }

    private func carryOut(_ after: After) {
        if after.settledNow { client.hedgeTimers.disarm(self) }
        for task in after.cancel { task.cancel() }
        if let hedge = after.hedge { launch(hedge) }
        after.waiter?.resume()
    }

    /// The caller was cancelled: every runner is, and the caller gets `.cancelled`.
    private func cancelAll() {
        let after = state.withLock { s in
            var after = After()
            if !s.settled {
                settle(&s, 0, &after)
                s.result = Held((0, .failure(PocketError(.cancelled, "the request was cancelled"))))
                s.primaryCancelled = true
                s.primary?.cancel()
                s.primary = nil
            }
            return after
        }
        carryOut(after)
    }

    /// The next hedge's number, counted as sent, when the policy, the
    /// deadline and the client's hedging budget allow one.
    private func nextHedge(_ s: inout State) -> Int? {
        guard s.hedges < box.maxHedges, deadline == .max || deadline > PocketDeadline.nowNanos(), client.extraRequests.permitsHedge() else {
            return nil
        }
        s.hedges += 1
        s.running += 1
        return s.hedges
    }

    /// Sends hedge `n` (reported as `.hedging`), and arms the timer for the next.
    private func launch(_ n: Int) {
        sink?.emit(.hedging, attempt: attempt, hedge: n)
        start(n, deadline == .max ? request : client.bounded(request, by: deadline))
        if n < box.maxHedges { client.hedgeTimers.arm(self, atNanos: nextDue) }
    }

    /// Runner `n` as a task of its own.
    private func start(_ n: Int, _ sent: PocketRequest) {
        let task = Task(priority: priority) {
            let outcome: Result<D.Response, any Error>
            do {
                outcome = .success(try await self.client.fetching(sent, progress: self.progress, self.delivery))
            } catch {
                outcome = .failure(error)
            }
            let after = self.answered(n, outcome)
            self.carryOut(after)
            if let discarded = after.discard { await discarded.response.discardBody() }
        }
        let late = state.withLock { s in
            if s.settled { return true }
            s.tasks.append(task)
            return false
        }
        if late { task.cancel() }
    }

    /// Whether an answer ends the race: a response that passes the request's
    /// validation, or (with none) whose status is not non-fatal.
    private func wins(_ outcome: Result<D.Response, any Error>) -> Bool {
        guard case .success(let response) = outcome else { return false }
        return wins(response)
    }

    private func wins(_ response: borrowing D.Response) -> Bool {
        if validated { return client.validationFailure(of: response, for: request) == nil }
        return !box.nonFatal.contains(response.redirectStatus)   // the status, without a copy of the response
    }
}

/// The delivery of a hedged request's own hops: `base`'s, with each hop's
/// engine request made known to the race, which cancels it when a hedge
/// wins (the request itself runs in the caller's task, which the race
/// cannot cancel).
struct HedgedDelivery<D: ResponseDelivery>: ResponseDelivery {
    var base: D
    let race: HedgeRace<D>

    static var hedges: Bool { D.hedges }

    /// `base`'s: the request and its hedges share it.
    var history: ReplicaHistory? {
        get { base.history }
        set { base.history = newValue }
    }

    var deadlineNanos: Int64 {
        get { base.deadlineNanos }
        set { base.deadlineNanos = newValue }
    }

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        let inflight = base.engineRequest(client: client, progress: progress)
        race.register(inflight)
        return inflight
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> D.Response {
        race.unregister(inflight)
        return base.response(response, from: &inflight, client: client)
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        race.unregister(inflight)
        return base.failed(error, inflight)
    }

    func deliver(_ complete: PocketResponse) throws -> D.Response { try base.deliver(complete) }

    /// The cache step with this delivery (its network hops still known to
    /// the race), when `base` is served by the cache step.
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> D.Response {
        guard let caching = self as? any CachingDelivery else {
            return try await base.cached(request, client: client, progress: progress)
        }
        return try await client.caching(request, progress: progress, caching) as! D.Response
    }
}

extension HedgedDelivery: CachingDelivery where D: CachingDelivery {
    func stored(_ entry: CacheEntry, head: CachedHead, age: Double, request: PocketRequest,
                cache: PocketResponseCache) -> D.Response? {
        base.stored(entry, head: head, age: age, request: request, cache: cache)
    }

    func store(_ response: inout D.Response, stored: PocketResponse, into writer: any CacheWriter) -> Bool {
        base.store(&response, stored: stored, into: writer)
    }

    func revalidated(_ answer: inout D.Response, by response: D.Response) { base.revalidated(&answer, by: response) }
}
