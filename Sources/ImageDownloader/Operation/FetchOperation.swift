/// One fetch, shared by every token that asked for the same resource, from queued to finished,
/// as a value: each method takes an event and returns the actions to perform, in order.
/// (The model is AsyncHTTPClient's `RequestBag+StateMachine`.) It never does I/O itself.
///
///     queued ──start──▶ running(1) ──head, chunks, end──▶ delivering ──last token processed──▶ finished
///                        │  ▲                                  (each token's own processing,
///                        │  │                                   its queue slot given back)
///           transient    │  │ retry timer
///           failure      ▼  │
///                     waitingToRetry(2)        any other failure / last token cancelled ──▶ finished
///
/// Tokens can join until the body is complete; a late joiner is brought up to date (started,
/// response, current progress). The fetch's priority is the highest among its live tokens.
/// Each token may bring its own retry budget and backoff (`TokenLimits`): after a transient
/// failure, tokens out of retries fail at once and the fetch retries for the others, after the
/// shortest of their delays. A token's deadline ends that token alone, as a cancel does, but
/// with a failure. A failure after several attempts carries the earlier ones' failures.
/// Its queue slot (the running limit and its host's) is given back as soon as the body is in
/// (`enterDelivery`): decoding and writing are a stage of their own, with their own concurrency,
/// and a slow decode does not keep the network idle. The downloader bounds the fetches in that
/// stage (`maxDeliveringFetches`), so the bodies in memory stay bounded however many are queued.
public struct FetchOperation: Sendable {
    public enum State: Sendable, Equatable {
        case queued
        case running(attempt: Int)
        case waitingToRetry(attempt: Int)
        case delivering
        case finished
    }

    public enum Action: Sendable, Equatable {
        case emitStarted(DownloadToken)
        case emitResponse(DownloadToken, ResponseInfo)
        case emitProgress(DownloadToken, received: Int64, expected: Int64?)
        case emitCancelled(DownloadToken)
        case emitFailure(DownloadToken, DownloadFailure)
        /// Hand the complete body to this token's processor.
        case process(DownloadToken)
        case setQueuePriority(DownloadPriority)
        /// Leave the operation queue (a waiting place or a running slot).
        case leaveQueue
        /// The body is in: give the running slot back and count the fetch in the delivery stage
        /// until it is `finished`.
        case enterDelivery
        case startAttempt(Int)
        case cancelAttempt
        case scheduleRetry(attempt: Int, delayMs: Int64)
        case cancelRetryTimer
        /// Put the URL on the failed-URL list.
        case recordFailure(DownloadFailure)
        /// Take the URL off the failed-URL list.
        case recordSuccess
        /// Nothing is left of this fetch: forget it.
        case finished
    }

    /// One token's own retry settings; nil: the worker's.
    public struct TokenLimits: Sendable, Equatable {
        public var maxRetries: Int?
        public var retryDelayMs: Int64?

        public init(maxRetries: Int? = nil, retryDelayMs: Int64? = nil) {
            self.maxRetries = maxRetries
            self.retryDelayMs = retryDelayMs
        }
    }

    public private(set) var state: State = .queued
    /// Live tokens in the order they joined, with their priorities.
    public private(set) var tokens: FetchTokens = []
    /// Tokens whose processing is under way (in `delivering`).
    private var processing: Set<DownloadToken> = []
    /// Boxed: a queued fetch has none, and the machine stays ~70 bytes smaller until it does.
    public private(set) var response: ResponseInfo? {
        get { responseBox?.info }
        set { responseBox = newValue.map(ResponseBox.init) }
    }
    private var responseBox: ResponseBox?

    private final class ResponseBox: Sendable {
        let info: ResponseInfo
        init(_ info: ResponseInfo) { self.info = info }
    }
    public private(set) var receivedBytes: Int64 = 0
    private var lastReportedBytes: Int64 = 0
    private var lastReportedAt: UInt64 = 0
    /// Tokens with retry settings of their own.
    private var limits: [DownloadToken: TokenLimits] = [:]
    /// Why each attempt that failed ended, in order.
    public private(set) var failedAttempts: [DownloadFailure] = []

    public init(token: DownloadToken, priority: DownloadPriority, limits: TokenLimits = TokenLimits()) {
        tokens = [(token, priority)]
        if limits != TokenLimits() { self.limits[token] = limits }
    }

    public var effectivePriority: DownloadPriority { tokens.map(\.priority).max() ?? .veryLow }

    /// New tokens may share this fetch until its body is complete.
    public var acceptsTokens: Bool {
        switch state {
        case .queued, .running, .waitingToRetry: return true
        case .delivering, .finished: return false
        }
    }

    public func contains(_ token: DownloadToken) -> Bool { tokens.contains { $0.token == token } }

    // MARK: Events

    public mutating func join(_ token: DownloadToken, priority: DownloadPriority, limits: TokenLimits = TokenLimits()) -> [Action] {
        precondition(acceptsTokens && !contains(token))
        let before = effectivePriority
        tokens.append((token, priority))
        if limits != TokenLimits() { self.limits[token] = limits }
        switch state {
        case .queued:
            return effectivePriority != before ? [.setQueuePriority(effectivePriority)] : []
        case .running:
            var actions: [Action] = [.emitStarted(token)]
            if let response {
                actions.append(.emitResponse(token, response))
                actions.append(.emitProgress(token, received: lastReportedBytes, expected: response.expectedBytes))
            }
            return actions
        case .waitingToRetry:
            return [.emitStarted(token)]
        case .delivering, .finished:
            preconditionFailure("unreachable")
        }
    }

    /// The queue gave this fetch a slot.
    public mutating func start() -> [Action] {
        guard state == .queued else { return [] }
        state = .running(attempt: 1)
        return tokens.map { .emitStarted($0.token) } + [.startAttempt(1)]
    }

    /// A 2xx response head arrived. The first is each token's `response`; a resumed attempt's
    /// `206` (`continuing`) goes on from the bytes received, with no new events; a later whole
    /// response (a retry that starts over) replaces the first quietly, and progress is reported
    /// again only once it passes what was reported (it never goes backwards).
    public mutating func responseReceived(_ info: ResponseInfo, now: UInt64, continuing: Bool = false) -> [Action] {
        guard case .running = state else { return [] }
        if continuing, response != nil { return [] }
        let first = response == nil
        response = info
        receivedBytes = 0
        guard first else { return [] }
        lastReportedBytes = 0
        lastReportedAt = now
        return tokens.flatMap { entry -> [Action] in
            [.emitResponse(entry.token, info), .emitProgress(entry.token, received: 0, expected: info.expectedBytes)]
        }
    }

    /// The body has grown to `total` bytes.
    public mutating func bodyReceived(total: Int64, now: UInt64, throttle: ProgressThrottle) -> [Action] {
        guard case .running = state, let response else { return [] }
        receivedBytes = total
        guard total > lastReportedBytes else { return [] }
        guard
            throttle.shouldReport(
                received: total, expected: response.expectedBytes, lastReportedBytes: lastReportedBytes,
                lastReportedAt: lastReportedAt, now: now)
        else { return [] }
        return reportProgress(now: now)
    }

    /// The body is complete. Every token moves on to its own processing.
    public mutating func attemptSucceeded(now: UInt64) -> [Action] {
        guard case .running = state else { return [] }
        var actions: [Action] = []
        if receivedBytes != lastReportedBytes {
            actions += reportProgress(now: now)
        }
        state = .delivering
        processing = Set(tokens.map(\.token))
        actions.append(.recordSuccess)
        actions.append(.enterDelivery)
        actions += tokens.map { .process($0.token) }
        return actions
    }

    /// The attempt failed. A transient failure before any response was reported, or one part-way
    /// through a body the next attempt can resume (`resumable`: `Range` + `If-Range`), is retried
    /// (after a delay) for the tokens with retries left (`retryPolicy`, or a token's own limits);
    /// the others, and every token after any other failure, fail with it (and the earlier
    /// attempts' failures).
    public mutating func attemptFailed(_ failure: DownloadFailure, retryPolicy: RetryPolicy, jitter: Double, resumable: Bool = false) -> [Action] {
        guard case .running(let attempt) = state else { return [] }
        failedAttempts.append(failure)
        let reported = failureToReport(failure)
        if failure.isTransient, response == nil || resumable {
            let policies = tokens.map { policy(of: $0.token, retryPolicy) }
            let staying = tokens.indices.filter { policies[$0].maxRetries >= attempt }
            if !staying.isEmpty {
                var retryAfter: Double? = nil
                if case .statusCode(_, let seconds) = failure { retryAfter = seconds }
                let delay = staying.map { policies[$0].delayMs(retry: attempt, retryAfterSeconds: retryAfter, jitter: jitter) }.min() ?? 0
                var actions: [Action] = []
                for index in tokens.indices where !staying.contains(index) {
                    actions.append(.emitFailure(tokens[index].token, reported))
                    limits[tokens[index].token] = nil
                }
                tokens = FetchTokens(staying.map { tokens[$0] })
                state = .waitingToRetry(attempt: attempt + 1)
                return actions + [.scheduleRetry(attempt: attempt + 1, delayMs: delay)]
            }
        }
        state = .finished
        var actions: [Action] = [.leaveQueue]
        if failure.blocksURL { actions.append(.recordFailure(failure)) }
        actions += tokens.map { .emitFailure($0.token, reported) }
        tokens.removeAll()
        limits.removeAll()
        actions.append(.finished)
        return actions
    }

    /// The retry policy of one token: the worker's, with the token's own limits over it.
    private func policy(of token: DownloadToken, _ base: RetryPolicy) -> RetryPolicy {
        guard let own = limits[token] else { return base }
        return RetryPolicy(
            maxRetries: own.maxRetries ?? base.maxRetries, baseDelayMs: own.retryDelayMs ?? base.baseDelayMs, maxDelayMs: base.maxDelayMs)
    }

    /// `failure`, the last attempt's: with the earlier ones' when there were.
    private func failureToReport(_ failure: DownloadFailure) -> DownloadFailure {
        guard failedAttempts.count > 1 else { return failure }
        return .afterAttempts(failure, attempts: failedAttempts.count, earlier: Array(failedAttempts.dropLast()))
    }

    /// A token's deadline passed (`deadlineMs` after its start): it fails alone, as a cancel
    /// ends it alone; the fetch stops with its last token. Once the body is complete the token's
    /// processing runs to its end, and the deadline no longer applies.
    public mutating func deadlineReached(_ token: DownloadToken, deadlineMs: Int64) -> [Action] {
        guard contains(token), state != .delivering, state != .finished else { return [] }
        let inFlight: Bool
        if case .running = state { inFlight = true } else { inFlight = false }
        let failure = DownloadFailure.network(.deadline, "no result within the deadline of \(deadlineMs) ms")
        let ended = DownloadFailure.afterAttempts(failure, attempts: failedAttempts.count + (inFlight ? 1 : 0), earlier: failedAttempts)
        return remove(token, ending: .emitFailure(token, ended))
    }

    public mutating func retryTimerFired() -> [Action] {
        guard case .waitingToRetry(let attempt) = state else { return [] }
        state = .running(attempt: attempt)
        return [.startAttempt(attempt)]
    }

    /// One token is cancelled. It alone ends (`cancelled`); the fetch stops only with its last token.
    public mutating func cancel(_ token: DownloadToken) -> [Action] {
        remove(token, ending: .emitCancelled(token))
    }

    /// Takes `token` out, its end first (`ending`), then what its leaving means for the fetch.
    private mutating func remove(_ token: DownloadToken, ending: Action) -> [Action] {
        guard let index = tokens.firstIndex(where: { $0.token == token }) else { return [] }
        let before = effectivePriority
        tokens.remove(at: index)
        limits[token] = nil
        var actions: [Action] = [ending]
        switch state {
        case .queued:
            if tokens.isEmpty {
                state = .finished
                actions += [.leaveQueue, .finished]
            } else if effectivePriority != before {
                actions.append(.setQueuePriority(effectivePriority))
            }
        case .running:
            if tokens.isEmpty {
                state = .finished
                actions += [.cancelAttempt, .leaveQueue, .finished]
            }
        case .waitingToRetry:
            if tokens.isEmpty {
                state = .finished
                actions += [.cancelRetryTimer, .leaveQueue, .finished]
            }
        case .delivering:
            processing.remove(token)
            if processing.isEmpty {
                state = .finished
                actions.append(.finished)
            }
        case .finished:
            break
        }
        return actions
    }

    public mutating func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) -> [Action] {
        guard let index = tokens.firstIndex(where: { $0.token == token }) else { return [] }
        let before = effectivePriority
        tokens[index].priority = priority
        if state == .queued, effectivePriority != before {
            return [.setQueuePriority(effectivePriority)]
        }
        return []
    }

    /// A token's processing finished. Returns whether the token was still live (and so gets its
    /// terminal event from the caller now), and what follows. Whether the processing failed (a
    /// decode, a write) does not matter here: it says nothing about the URL, whose bytes arrived
    /// and may suit another request as they are, so it never puts the URL on the failed list.
    public mutating func tokenProcessed(_ token: DownloadToken) -> (live: Bool, actions: [Action]) {
        guard state == .delivering, processing.remove(token) != nil else { return (false, []) }
        tokens.removeAll { $0.token == token }
        var actions: [Action] = []
        if processing.isEmpty {
            state = .finished
            actions.append(.finished)
        }
        return (true, actions)
    }

    private mutating func reportProgress(now: UInt64) -> [Action] {
        lastReportedBytes = receivedBytes
        lastReportedAt = now
        let expected = response?.expectedBytes
        return tokens.map { .emitProgress($0.token, received: receivedBytes, expected: expected) }
    }
}

extension FetchOperation.State: CustomStringConvertible {
    public var description: String {
        switch self {
        case .queued: return "queued"
        case .running: return "running"
        case .waitingToRetry: return "waitingToRetry"
        case .delivering: return "delivering"
        case .finished: return "finished"
        }
    }
}
