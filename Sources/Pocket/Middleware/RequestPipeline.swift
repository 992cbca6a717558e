#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs one request through middleware, the transport and the retry loop,
/// reporting each state to the task's observers and the client's events.
/// One per client, made at init; `send` uses it only when `isEngaged`.
final class RequestPipeline: Sendable {
    let handling: PocketRequestHandling
    let hub = EventHub()
    /// `handling.isActive`, computed once.
    private let active: Bool

    init(_ handling: PocketRequestHandling) {
        self.handling = handling
        self.active = handling.isActive
    }

    /// Whether a plain `send` has to come here: configured middleware,
    /// retries or transport, or someone listening to events.
    var isEngaged: Bool {
        active || hub.listenerCount.load(ordering: .relaxed) > 0
    }

    func sink(for request: PocketRequest, options: PocketSendOptions, taskID: UInt64? = nil) -> EventSink {
        EventSink(hub: hub, taskID: taskID ?? hub.newTaskID(), method: request.method, url: request.url,
                  endpoint: options.endpoint ?? request.url.path(percentEncoded: false), observers: options.observers)
    }

    func send(_ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?, client: PocketClient,
              sink: EventSink) async throws -> PocketResponse {
        let context = PocketMiddlewareContext(taskID: sink.taskID, endpoint: sink.endpoint)
        do {
            return try await attempts(request, options: options, progress: progress, client: client, sink: sink,
                                      context: context)
        } catch let error as PocketError where error.code == .cancelled {
            sink.emit(.cancelled, attempt: context.attempt, error: error)
            throw error
        } catch is CancellationError {
            let error = PocketError(.cancelled, "the request was cancelled")
            sink.emit(.cancelled, attempt: context.attempt, error: error)
            throw error
        }
    }

    private func attempts(_ request: PocketRequest, options: PocketSendOptions, progress: PocketProgressHandler?,
                          client: PocketClient, sink: EventSink, context: PocketMiddlewareContext) async throws -> PocketResponse {
        let chain = options.middleware.isEmpty ? handling.middleware : handling.middleware + options.middleware
        let policy = options.retry ?? handling.retry
        let clock = handling.clock
        let started = clock.uptime()
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        while true {
            attempt += 1
            if Task.isCancelled { throw PocketError(.cancelled, "the request was cancelled") }
            context.begin(attempt: attempt)
            sink.emit(.running, attempt: attempt)
            var sent = request
            let attemptStart = ContinuousClock.now
            let outcome: Result<PocketResponse, any Error>
            do {
                for middleware in chain { sent = try await middleware.adapt(sent, context: context) }
                if let deadline = policy?.deadline {
                    let remaining = deadline - (clock.uptime() - started)
                    guard remaining > .zero else {
                        throw PocketError(.deadlineExceeded, "the retry deadline of \(deadline) passed before attempt \(attempt)")
                    }
                    var timeouts = sent.timeouts ?? client.configuration.timeouts
                    timeouts.total = min(timeouts.total ?? remaining, remaining)
                    sent.timeouts = timeouts
                }
                var response: PocketResponse
                if let transport = handling.transport {
                    response = try await transport.send(sent, progress: progress)
                } else {
                    response = try await client.sendDirect(sent, progress: progress)
                }
                response.request = sent
                outcome = .success(response)
            } catch {
                outcome = .failure(error)
            }
            context.end(elapsed: ContinuousClock.now - attemptStart)
            for middleware in chain.reversed() { await middleware.observe(outcome, for: sent, context: context) }
            if Self.isCancellation(outcome) { return try outcome.get() }

            var decision: PocketRetryDecision?
            do {
                for middleware in chain {
                    decision = try await middleware.retry(outcome, for: sent, context: context)
                    if decision != nil { break }
                }
            } catch {
                sink.emit(.finished, attempt: attempt, error: error)
                throw error
            }
            let record = PocketRetryAttempt(request: sent, number: attempt, response: try? outcome.get(),
                                      error: outcome.failure, elapsed: clock.uptime() - started)
            let delay: Duration
            if let decision {
                guard case .retryAfter(let d) = (policy ?? .none).resolve(decision, after: record, using: &generator) else {
                    return try finish(outcome, attempt: attempt, sink: sink)
                }
                delay = d
            } else if let policy, case .retryAfter(let d) = policy.decide(record, now: clock.date(), using: &generator) {
                delay = d
            } else {
                return try finish(outcome, attempt: attempt, sink: sink)
            }
            guard attempt < handling.maxAttempts else {
                let error = PocketError(.tooManyAttempts, "\(request.method) \(request.url.absoluteString): \(attempt) attempts made, the most `RequestHandling.maxAttempts` allows",
                                        underlying: outcome.failure, response: Self.head(outcome))
                sink.emit(.finished, attempt: attempt, error: error)
                throw error
            }
            if request.body?.isReplayable == false {
                let error = PocketError(.bodyNotReplayable, "\(request.method) \(request.url.absoluteString) would be retried after attempt \(attempt) (\(Self.describe(outcome))), but its body is a one-shot stream and was not sent again",
                                        underlying: outcome.failure, response: Self.head(outcome))
                sink.emit(.finished, attempt: attempt, error: error)
                throw error
            }
            sink.emit(.retrying, attempt: attempt, status: Self.head(outcome)?.status, error: outcome.failure, retryDelay: delay)
            if delay > .zero {
                do {
                    try await clock.sleep(for: delay)
                } catch {
                    throw PocketError(.cancelled, "the request was cancelled while waiting to retry", underlying: error)
                }
            }
        }
    }

    private func finish(_ outcome: Result<PocketResponse, any Error>, attempt: Int, sink: EventSink) throws -> PocketResponse {
        switch outcome {
        case .success(let response):
            sink.emit(.finished, attempt: attempt, status: response.status)
            return response
        case .failure(var error):
            if Self.isCancellation(outcome) { throw error }
            if attempt > 1, var pocket = error as? PocketError {
                pocket.message += " (after \(attempt) attempts)"
                error = pocket
            }
            sink.emit(.finished, attempt: attempt, error: error)
            throw error
        }
    }

    static func isCancellation(_ outcome: Result<PocketResponse, any Error>) -> Bool {
        guard case .failure(let error) = outcome else { return false }
        return (error as? PocketError)?.code == .cancelled || error is CancellationError
    }

    static func head(_ outcome: Result<PocketResponse, any Error>) -> PocketResponseHead? {
        switch outcome {
        case .success(let r): return PocketResponseHead(status: r.status, reason: r.reason, headers: r.headers)
        case .failure(let e): return (e as? PocketError)?.response
        }
    }

    static func describe(_ outcome: Result<PocketResponse, any Error>) -> String {
        switch outcome {
        case .success(let r): return "HTTP \(r.status)"
        case .failure(let e): return "\(e)"
        }
    }
}

extension Result {
    /// The error, or nil for a success.
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
