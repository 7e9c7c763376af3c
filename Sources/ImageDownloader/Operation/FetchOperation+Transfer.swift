import NIOCore

/// What a running fetch holds: the current attempt's machine and everything that outlives an
/// attempt (the body so far, the first response, the validator a resumed attempt sends, the
/// earlier attempts' failures, what progress was last reported).
struct FetchTransfer: Sendable {
    var attempt: FetchAttempt
    private(set) var body = ByteBuffer()
    /// What the body's first copy reserves: the declared length, when there is a sane one.
    private var plannedCapacity = 0
    /// `body` is the first chunk itself, sharing the network's read buffer (not yet copied).
    private var bodyIsChunk = false
    /// The first response taken: the fetch's (a later whole response replaces it quietly).
    var response: ResponseInfo?
    /// The response's `If-Range` validator, when it allows resuming (`Accept-Ranges: bytes`).
    var validator: String?
    /// The body's whole length, from the first whole response.
    var expectedTotal: Int64?
    /// Why each attempt that failed ended, in order.
    var failedAttempts: [DownloadFailure] = []
    var lastReportedBytes: Int64 = 0
    var lastReportedAt: UInt64 = 0

    init(attempt: FetchAttempt) { self.attempt = attempt }

    /// A whole body begins (again): what came before goes.
    mutating func restartBody(expectedBytes: Int64?) {
        body = ByteBuffer()
        bodyIsChunk = false
        plannedCapacity = expectedBytes.map { $0 > 0 && $0 <= 64 << 20 ? Int($0) : 0 } ?? 0
    }

    /// Appends a chunk of the body. An image usually comes in one read: a first chunk that holds
    /// the whole declared body (or comes with no declared length) and fills at least half of its
    /// read buffer is kept as it is, uncopied (a small one in a large buffer is copied, so that a
    /// waiting body never holds much more memory than its bytes). Else the body gets its own
    /// buffer, of the declared length; a kept chunk moves into one when a second chunk comes.
    mutating func append(_ chunk: ByteBuffer) {
        if body.readableBytes == 0 {
            if chunk.readableBytes >= plannedCapacity, chunk.storageCapacity <= 2 * chunk.readableBytes {
                body = chunk
                bodyIsChunk = true
                return
            }
            body = ByteBuffer()
            body.reserveCapacity(max(plannedCapacity, chunk.readableBytes))
            bodyIsChunk = false
        } else if bodyIsChunk {
            var own = ByteBuffer()
            own.reserveCapacity(max(plannedCapacity, body.readableBytes + chunk.readableBytes))
            own.writeImmutableBuffer(body)
            body = own
            bodyIsChunk = false
        }
        body.writeImmutableBuffer(chunk)
    }

    /// Progress for every token, and the report remembered (it never goes backwards).
    mutating func reportProgress(to tokens: FetchTokens, now: UInt64) -> [FetchOperation.TokenEvent] {
        let received = Int64(body.readableBytes)
        lastReportedBytes = received
        lastReportedAt = now
        let expected = response?.expectedBytes
        return tokens.map { .progress($0.token, received: received, expected: expected) }
    }
}

/// The transfer's events: an attempt's start, its head, its chunks, the idle watchdog and its end.
/// Each names its attempt: an event of an attempt that is no longer the current one is `stale`.
extension FetchOperation {
    /// A response head, as the loader gave it.
    public struct Head: Sendable, Equatable {
        /// Status, declared length (`expectedBytes`), type and final URL.
        public var info: ResponseInfo
        public var contentRange: String?
        public var retryAfterSeconds: Double?
        /// `ResumePoint.validator(headers:)` of the response.
        public var validator: String?
        /// The response's `X-Robots-Tag` headers, each as sent.
        public var robotsTags: [String]

        public init(
            info: ResponseInfo, contentRange: String? = nil, retryAfterSeconds: Double? = nil, validator: String? = nil, robotsTags: [String] = []
        ) {
            (self.info, self.contentRange, self.retryAfterSeconds, self.validator) = (info, contentRange, retryAfterSeconds, validator)
            self.robotsTags = robotsTags
        }
    }

    /// Whether the attempt's transfer is current and not stopped (head and bytes may come).
    func isTransferring(_ attempt: Int) -> Bool {
        guard case .running(let transfer) = stage else { return false }
        return transfer.attempt.number == attempt && transfer.attempt.isTransferring
    }

    /// The loader's task for `attempt` runs: the idle clock starts. False: not current (no watchdog).
    public mutating func attemptBegan(_ attempt: Int, now: UInt64) -> Bool {
        guard case .running(var transfer) = stage, transfer.attempt.number == attempt else { return false }
        stage = .modifying
        transfer.attempt.began(now: now)
        stage = .running(transfer)
        return true
    }

    /// The response head of `attempt`. A 2xx is taken (a resumed attempt's `206` goes on from
    /// the bytes received; see `FetchAttempt.headReceived` for what is refused). The first taken
    /// is each token's `response`; a later whole response (a retry that starts over, or a server
    /// that would not resume) replaces it quietly and the body starts over; progress is reported
    /// again only once it passes what was reported (it never goes backwards). A refused head of a
    /// resumed attempt drops the validator: the next attempt starts over. A whole response whose
    /// `X-Robots-Tag` says a directive `robots` refuses fails with `optedOut`, before its body.
    public mutating func headReceived(
        _ attempt: Int, _ head: Head, maxBodyBytes: Int64, robots: RobotsTagPolicy = RobotsTagPolicy(), now: UInt64
    ) -> HeadAction {
        guard isTransferring(attempt), case .running(var transfer) = stage else { return .stale }
        stage = .modifying
        defer { stage = .running(transfer) }
        let optedOut = robots.refusal(head.robotsTags).map { DownloadFailure.optedOut(directives: $0.directives, header: $0.header) }
        let taken = transfer.attempt.headReceived(
            status: head.info.status, contentLength: head.info.expectedBytes, contentRange: head.contentRange,
            retryAfterSeconds: head.retryAfterSeconds, maxBodyBytes: maxBodyBytes, optedOut: optedOut, now: now)
        let continuing: Bool
        switch taken {
        case nil:
            return .stale
        case .failure(let failure):
            if transfer.attempt.resume != nil { transfer.validator = nil }
            return .refuse(failure)
        case .success(let kind):
            continuing = kind == .continuing
        }
        var discards = false
        if !continuing {
            // A whole body (again, if an attempt to resume got a 200): what came before goes.
            discards = transfer.body.readableBytes > 0
            transfer.restartBody(expectedBytes: head.info.expectedBytes)
            transfer.validator = head.validator
            transfer.expectedTotal = head.info.expectedBytes
        }
        if continuing, transfer.response != nil { return .accept(events: [], discardsBody: false) }
        let first = transfer.response == nil
        transfer.response = head.info
        guard first else { return .accept(events: [], discardsBody: discards) }
        transfer.lastReportedBytes = 0
        transfer.lastReportedAt = now
        let events = tokens.flatMap { entry -> [TokenEvent] in
            [.response(entry.token, head.info), .progress(entry.token, received: 0, expected: head.info.expectedBytes)]
        }
        return .accept(events: events, discardsBody: discards)
    }

    /// Bytes of `attempt`'s body arrived: they are appended (never copied: the stage lets go of
    /// the body first). Past the limit, or past the declared length (a body that mixes two
    /// answers, never resumed from), the attempt fails.
    public mutating func bodyReceived(_ attempt: Int, _ chunk: ByteBuffer, maxBodyBytes: Int64, now: UInt64, throttle: ProgressThrottle) -> BodyAction {
        guard isTransferring(attempt), case .running(var transfer) = stage else { return .stale }
        stage = .modifying
        defer { stage = .running(transfer) }
        let offset = Int64(transfer.body.readableBytes)
        transfer.append(chunk)
        let total = Int64(transfer.body.readableBytes)
        if let failure = transfer.attempt.bodyReceived(total: total, maxBodyBytes: maxBodyBytes, now: now) {
            if transfer.attempt.overran { transfer.validator = nil }
            return .refuse(offset: offset, failure)
        }
        guard let response = transfer.response, total > transfer.lastReportedBytes,
            throttle.shouldReport(
                received: total, expected: response.expectedBytes, lastReportedBytes: transfer.lastReportedBytes,
                lastReportedAt: transfer.lastReportedAt, now: now)
        else { return .accept(offset: offset, events: []) }
        return .accept(offset: offset, events: transfer.reportProgress(to: tokens, now: now))
    }

    /// The idle watchdog of `attempt` woke.
    mutating func watchdogWoke(_ attempt: Int, now: UInt64, timeoutMs: Int64) -> FetchAttempt.WatchdogAction {
        guard case .running(var transfer) = stage, transfer.attempt.number == attempt else { return .stop }
        stage = .modifying
        defer { stage = .running(transfer) }
        return transfer.attempt.watchdogWoke(now: now, timeoutMs: timeoutMs)
    }

    /// The loader of `attempt` returned (`error` nil) or threw. A complete body is delivered. A
    /// failure is retried (after a delay) for the tokens with retries left (`retryPolicy`, or a
    /// token's own limits) when it is transient and either came before any response or left a
    /// body the next attempt can resume (`Range` + `If-Range`: the response had a validator); an
    /// attempt whose resume was refused gets one more whole attempt. The other tokens, and every
    /// token after any other failure, fail with it (and the earlier attempts' failures).
    public mutating func attemptEnded(_ attempt: Int, error: (any Error)?, retryPolicy: RetryPolicy, jitter: Double, now: UInt64) -> EndAction {
        guard case .running(var transfer) = stage, transfer.attempt.number == attempt else { return .stale }
        stage = .modifying
        var outcome = transfer.attempt.loaderEnded(error: error)
        if case .succeeded = outcome, transfer.response == nil {
            // A body is accepted only after a head, whose info the transfer keeps: not expected.
            outcome = .failed(.network(.io, "the transfer ended without a response"))
        }
        switch outcome {
        case .succeeded:
            guard let response = transfer.response else { preconditionFailure("checked above") }
            let received = Int64(transfer.body.readableBytes)
            let progress = received != transfer.lastReportedBytes ? transfer.reportProgress(to: tokens, now: now) : []
            let live = tokens.map(\.token)
            stage = .delivering(Delivering(processing: Set(live), received: received, response: response))
            bodyDelivered = true
            return .deliver(Delivery(progress: progress, response: response, body: transfer.body, tokens: live))
        case .failed(let failure):
            return attemptFailed(failure, transfer: transfer, retryPolicy: retryPolicy, jitter: jitter)
        }
    }

    private mutating func attemptFailed(_ cause: DownloadFailure, transfer: FetchTransfer, retryPolicy: RetryPolicy, jitter: Double) -> EndAction {
        var transfer = transfer
        let number = transfer.attempt.number
        transfer.failedAttempts.append(cause)
        let failure =
            transfer.failedAttempts.count > 1
            ? DownloadFailure.afterAttempts(cause, attempts: transfer.failedAttempts.count, earlier: Array(transfer.failedAttempts.dropLast()))
            : cause
        // Part of the body came, and the response allows resuming: the next attempt asks for the
        // rest. A server that would not resume gets one more whole attempt.
        let received = Int64(transfer.body.readableBytes)
        let refusedResume = transfer.attempt.resume != nil && transfer.validator == nil
        var resume: ResumePoint? = nil
        if cause.isTransient, received > 0, let validator = transfer.validator {
            resume = ResumePoint(offset: received, validator: validator, total: transfer.expectedTotal)
        }
        if cause.isTransient, transfer.response == nil || resume != nil || refusedResume {
            let policies = tokens.map { policy(of: $0.token, retryPolicy) }
            let staying = tokens.indices.filter { policies[$0].maxRetries >= number }
            if !staying.isEmpty {
                var retryAfter: Double? = nil
                if case .statusCode(_, let seconds) = cause { retryAfter = seconds }
                let delay = staying.map { policies[$0].delayMs(retry: number, retryAfterSeconds: retryAfter, jitter: jitter) }.min() ?? 0
                let failing = tokens.indices.filter { !staying.contains($0) }.map { tokens[$0].token }
                for token in failing { limits[token] = nil }
                tokens = FetchTokens(staying.map { tokens[$0] })
                stage = .waitingToRetry(transfer, next: number + 1, resume: resume)
                return .retry(cause: cause, failing: failing, failure: failure, attempt: number + 1, delayMs: delay)
            }
        }
        stage = .finished
        let ending = tokens.map(\.token)
        tokens.removeAll()
        limits.removeAll()
        return .fail(cause: cause, tokens: ending, failure: failure, blocksURL: cause.blocksURL)
    }

    /// The retry policy of one token: the worker's, with the token's own limits over it.
    private func policy(of token: DownloadToken, _ base: RetryPolicy) -> RetryPolicy {
        guard let own = limits[token] else { return base }
        return RetryPolicy(
            maxRetries: own.maxRetries ?? base.maxRetries, baseDelayMs: own.retryDelayMs ?? base.baseDelayMs, maxDelayMs: base.maxDelayMs)
    }
}
