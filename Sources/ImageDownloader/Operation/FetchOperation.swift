import NIOCore

/// One fetch, shared by every token that asked for the same resource, from queued to finished,
/// as a value: each event returns what to do, in a type of its own (`FetchOperation+Actions`).
/// (The model is AsyncHTTPClient's `RequestBag+StateMachine`.) It never does I/O itself.
///
///     queued ──start──▶ running(1) ──head, chunks, end──▶ delivering ──last token processed──▶ finished
///                        │  ▲                                  (each token's own processing,
///                        │  │                                   its queue slot given back)
///           transient    │  │ retry timer
///           failure      ▼  │
///                     waitingToRetry(2)        any other failure / last token cancelled ──▶ finished
///
/// The data lives in the state it belongs to: a running fetch's `FetchTransfer` holds the current
/// attempt's machine (`FetchAttempt`), the body so far, the first response, the validator a
/// resumed attempt sends and the earlier attempts' failures; a fetch waiting to retry holds the
/// same with the point the next attempt resumes from; a delivering one, the tokens still being
/// processed. Resume and retry are decided here (`attemptEnded`).
///
/// Tokens can join until the body is complete; a late joiner is brought up to date (started,
/// response, current progress). The fetch's priority is the highest among its live tokens.
/// Each token may bring its own retry budget and backoff (`TokenLimits`): after a transient
/// failure, tokens out of retries fail at once and the fetch retries for the others, after the
/// shortest of their delays. A token's deadline ends that token alone, as a cancel does, but
/// with a failure. A failure after several attempts carries the earlier ones' failures.
/// While it waits to retry with no bytes kept (`keepsSlotWhileWaiting`), its running slot is
/// lent to other hosts (its host's slot stays taken: `DownloadQueue.park`): the timer puts it back
/// in the queue, and the queue's `start` runs the next attempt, so a dead host's backoff does not
/// hold back other hosts. A fetch that keeps bytes to resume from keeps its slot, so the bodies
/// held stay bounded by the running limit.
/// Its queue slot (the running limit and its host's) is given back as soon as the body is in
/// (`deliver`): decoding and writing are a stage of their own, with their own concurrency,
/// and a slow decode does not keep the network idle. The downloader bounds the fetches in that
/// stage (`maxDeliveringFetches`), so the bodies in memory stay bounded however many are queued.
public struct FetchOperation: Sendable {
    /// Where the fetch is (what `status` shows).
    public enum State: Sendable, Equatable {
        case queued
        case running(attempt: Int)
        case waitingToRetry(attempt: Int)
        case delivering
        case finished
    }

    /// The states with their data. (Indirect: a queued fetch, the many that wait, holds a few
    /// bytes rather than room for a transfer.)
    enum Stage: Sendable {
        case queued
        indirect case running(FetchTransfer)
        /// `next` attempt resumes from `resume` (nil: it fetches the whole body).
        indirect case waitingToRetry(FetchTransfer, next: Int, resume: ResumePoint?)
        indirect case delivering(Delivering)
        case finished
        /// Only while an event changes a payload in place (the body is never copied: the stage
        /// lets go of it first).
        case modifying
    }

    /// The tokens whose processing is under way, and what status shows of the fetch meanwhile.
    struct Delivering: Sendable {
        var processing: Set<DownloadToken>
        var received: Int64
        var response: ResponseInfo
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

    var stage: Stage = .queued
    /// Live tokens in the order they joined, with their priorities.
    public internal(set) var tokens: FetchTokens = []
    /// Tokens with retry settings of their own.
    var limits: [DownloadToken: TokenLimits] = [:]
    /// The request carries a `Range` of the caller's own: a `206` is its answer.
    let callerRange: Bool
    /// A token asked for the body as it arrives (`DownloadRequest.streamsBody`): its chunks go to
    /// the fetch's follower too.
    public private(set) var streamsBody: Bool
    /// The body came in whole and went to the tokens' processors (whatever happens after):
    /// else the fetch ended without one.
    public internal(set) var bodyDelivered = false
    /// The attempt `HostHealth` admitted (not refused) and has not heard the end of: its outcome
    /// goes there once it ends, or its abandonment once the fetch ends first (cancelled). Kept
    /// apart from the stage, which a cancel ends while the attempt is still in flight.
    public private(set) var hostAdmission: HostAdmission?

    /// An attempt let through by `HostHealth`, and its host's key when it was made then (with no
    /// host failing, the key is made only if the attempt fails).
    public struct HostAdmission: Sendable, Equatable {
        public var attempt: Int
        public var host: String?
    }

    public init(
        token: DownloadToken, priority: DownloadPriority, limits: TokenLimits = TokenLimits(), callerRange: Bool = false,
        streamsBody: Bool = false
    ) {
        tokens = [(token, priority)]
        self.callerRange = callerRange
        self.streamsBody = streamsBody
        if limits != TokenLimits() { self.limits[token] = limits }
    }

    public var state: State {
        switch stage {
        case .queued: return .queued
        case .running(let transfer): return .running(attempt: transfer.attempt.number)
        case .waitingToRetry(_, let next, _): return .waitingToRetry(attempt: next)
        case .delivering: return .delivering
        case .finished, .modifying: return .finished
        }
    }

    /// The first response taken (nil before it, and once finished).
    public var response: ResponseInfo? {
        switch stage {
        case .running(let transfer), .waitingToRetry(let transfer, _, _): return transfer.response
        case .delivering(let delivering): return delivering.response
        case .queued, .finished, .modifying: return nil
        }
    }

    /// The bytes of the body received so far (the whole body's, once delivering).
    public var receivedBytes: Int64 {
        switch stage {
        case .running(let transfer), .waitingToRetry(let transfer, _, _): return Int64(transfer.body.readableBytes)
        case .delivering(let delivering): return delivering.received
        case .queued, .finished, .modifying: return 0
        }
    }

    public var effectivePriority: DownloadPriority { tokens.map(\.priority).max() ?? .veryLow }

    /// New tokens may share this fetch until its body is complete.
    public var acceptsTokens: Bool {
        switch stage {
        case .queued, .running, .waitingToRetry: return true
        case .delivering, .finished, .modifying: return false
        }
    }

    public func contains(_ token: DownloadToken) -> Bool { tokens.contains { $0.token == token } }

    // MARK: Host admission

    /// Attempt `number` goes to its host as `HostHealth` said (a refused one records nothing):
    /// any earlier attempt's admission is replaced.
    public mutating func attemptLaunched(_ number: Int, admittedTo host: String??) {
        hostAdmission = host.map { HostAdmission(attempt: number, host: $0) }
    }

    /// The admission to report for attempt `number` (nil: whichever attempt holds one), once:
    /// none for an attempt that was refused, replaced or already reported.
    public mutating func takeHostAdmission(of number: Int? = nil) -> HostAdmission? {
        guard let admission = hostAdmission, number == nil || admission.attempt == number else { return nil }
        hostAdmission = nil
        return admission
    }

    // MARK: Token events (the transfer's are in FetchOperation+Transfer.swift)

    /// A token that `streamsBody` and is the fetch's first gets the body so far in its catch-up.
    public mutating func join(
        _ token: DownloadToken, priority: DownloadPriority, limits: TokenLimits = TokenLimits(), streamsBody streams: Bool = false
    ) -> JoinAction {
        precondition(acceptsTokens && !contains(token))
        let before = effectivePriority
        let firstStreamer = streams && !streamsBody
        if streams { streamsBody = true }
        tokens.append((token, priority))
        if limits != TokenLimits() { self.limits[token] = limits }
        switch stage {
        case .queued:
            return effectivePriority != before ? .setQueuePriority(effectivePriority) : .none
        case .running(let transfer):
            let body = firstStreamer && transfer.body.readableBytes > 0 ? transfer.body : nil
            guard let response = transfer.response else { return .catchUp([.started(token)], body: body) }
            return .catchUp(
                [
                    .started(token), .response(token, response),
                    .progress(token, received: transfer.lastReportedBytes, expected: response.expectedBytes),
                ], body: body)
        case .waitingToRetry(let transfer, _, _):
            return .catchUp([.started(token)], body: firstStreamer && transfer.body.readableBytes > 0 ? transfer.body : nil)
        case .delivering, .finished, .modifying:
            preconditionFailure("unreachable")
        }
    }

    /// While waiting to retry: whether the fetch keeps its queue slot (it holds bytes a resumed or
    /// restarted attempt still needs) or lends it out until its timer fires.
    public var keepsSlotWhileWaiting: Bool {
        guard case .waitingToRetry(let transfer, _, _) = stage else { return false }
        return transfer.body.readableBytes > 0
    }

    /// The queue gave this fetch a slot: every token has started, and the first attempt runs; or,
    /// for a fetch that lent its slot while it waited to retry, the next attempt runs (its tokens
    /// started long ago).
    public mutating func start() -> Start? {
        if case .waitingToRetry = stage, let launch = retryTimerFired() {
            return Start(started: [], launch: launch)
        }
        guard case .queued = stage else { return nil }
        stage = .running(FetchTransfer(attempt: FetchAttempt(number: 1, callerRange: callerRange)))
        return Start(started: tokens.map(\.token), launch: Launch(attempt: 1, resume: nil, discardsBody: false))
    }

    /// The retry timer fired: the next attempt runs, resumed where the last one stopped when it
    /// can be; else the body so far is dropped and it starts over.
    public mutating func retryTimerFired() -> Launch? {
        guard case .waitingToRetry(var transfer, let next, let resume) = stage else { return nil }
        stage = .modifying
        let discards = resume == nil && transfer.body.readableBytes > 0
        if resume == nil { transfer.restartBody(expectedBytes: nil) }
        transfer.attempt = FetchAttempt(number: next, resume: resume, callerRange: callerRange)
        stage = .running(transfer)
        return Launch(attempt: next, resume: resume, discardsBody: discards)
    }

    /// A token's deadline passed (`deadlineMs` after its start): it fails alone, as a cancel
    /// ends it alone; the fetch stops with its last token. Once the body is complete the token's
    /// processing runs to its end, and the deadline no longer applies.
    public mutating func deadlineReached(_ token: DownloadToken, deadlineMs: Int64) -> Removal? {
        let earlier: [DownloadFailure]
        let inFlight: Bool
        switch stage {
        case .running(let transfer): (earlier, inFlight) = (transfer.failedAttempts, true)
        case .waitingToRetry(let transfer, _, _): (earlier, inFlight) = (transfer.failedAttempts, false)
        case .queued: (earlier, inFlight) = ([], false)
        case .delivering, .finished, .modifying: return nil
        }
        let failure = DownloadFailure.network(.deadline, "no result within the deadline of \(deadlineMs) ms")
        return remove(token, failure: .afterAttempts(failure, attempts: earlier.count + (inFlight ? 1 : 0), earlier: earlier))
    }

    /// One token is cancelled. It alone ends (`cancelled`); the fetch stops only with its last token.
    public mutating func cancel(_ token: DownloadToken) -> Removal? {
        remove(token, failure: nil)
    }

    /// Takes `token` out, then says what its leaving means for the fetch.
    private mutating func remove(_ token: DownloadToken, failure: DownloadFailure?) -> Removal? {
        guard let index = tokens.firstIndex(where: { $0.token == token }) else { return nil }
        let before = effectivePriority
        tokens.remove(at: index)
        limits[token] = nil
        var then = AfterRemoval.none
        switch stage {
        case .queued:
            if tokens.isEmpty {
                (stage, then) = (.finished, .dropQueued)
            } else if effectivePriority != before {
                then = .setQueuePriority(effectivePriority)
            }
        case .running:
            if tokens.isEmpty { (stage, then) = (.finished, .stopTransfer) }
        case .waitingToRetry:
            if tokens.isEmpty {
                (stage, then) = (.finished, .stopRetryTimer)
            } else if effectivePriority != before {
                then = .setQueuePriority(effectivePriority)  // (the queue has it only while the slot is lent)
            }
        case .delivering(var delivering):
            delivering.processing.remove(token)
            if delivering.processing.isEmpty {
                (stage, then) = (.finished, .endDelivery)
            } else {
                stage = .delivering(delivering)
            }
        case .finished, .modifying:
            break
        }
        return Removal(token: token, failure: failure, then: then)
    }

    /// The queue's new priority for the fetch, if it is queued (or waiting to retry, its slot
    /// perhaps lent) and that changed.
    public mutating func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) -> DownloadPriority? {
        guard let index = tokens.firstIndex(where: { $0.token == token }) else { return nil }
        let before = effectivePriority
        tokens[index].priority = priority
        switch stage {
        case .queued, .waitingToRetry: return effectivePriority != before ? effectivePriority : nil
        default: return nil
        }
    }

    /// A token's processing finished. Whether the processing failed (a decode, a write) does not
    /// matter here: it says nothing about the URL, whose bytes arrived and may suit another
    /// request as they are, so it never puts the URL on the failed list.
    public mutating func tokenProcessed(_ token: DownloadToken) -> ProcessedAction {
        guard case .delivering(var delivering) = stage, delivering.processing.remove(token) != nil else { return .dropResult }
        tokens.removeAll { $0.token == token }
        if delivering.processing.isEmpty {
            stage = .finished
            return .endToken(fetchFinished: true)
        }
        stage = .delivering(delivering)
        return .endToken(fetchFinished: false)
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
