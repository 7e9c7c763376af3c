import ImageDownloader
import TestSupport
import Testing

@Suite struct FetchOperationTests {
    let a = DownloadToken.string("a")
    let b = DownloadToken.string("b")
    let c = DownloadToken.int(3)
    let noThrottle = ProgressThrottle(minimumFraction: 0, minimumIntervalNanos: 0)
    let retries = RetryPolicy(maxRetries: 2, baseDelayMs: 100, maxDelayMs: 1000)

    func info(_ expected: Int64? = 100) -> ResponseInfo {
        ResponseInfo(status: 200, expectedBytes: expected, mimeType: "image/png", finalURL: "http://x/y", httpVersion: "1.1")
    }

    @Test func aSuccessfulFetchFromQueueToFinished() {
        var op = FetchOperation(token: a, priority: .normal)
        #expect(op.start() == [.emitStarted(a), .startAttempt(1)])
        #expect(op.responseReceived(info(), now: 0) == [.emitResponse(a, info()), .emitProgress(a, received: 0, expected: 100)])
        #expect(op.bodyReceived(total: 40, now: 1, throttle: noThrottle) == [.emitProgress(a, received: 40, expected: 100)])
        #expect(op.bodyReceived(total: 100, now: 2, throttle: noThrottle) == [.emitProgress(a, received: 100, expected: 100)])
        // The slot is given back once the body is in, before the body is processed (decoded,
        // written): the delivery stage is the downloader's to bound (`maxDeliveringFetches`).
        #expect(op.attemptSucceeded(now: 3) == [.recordSuccess, .enterDelivery, .process(a)])
        #expect(op.state == .delivering)
        #expect(!op.acceptsTokens)
        let (live, actions) = op.tokenProcessed(a)
        #expect(live && actions == [.finished])
        #expect(op.state == .finished)
    }

    @Test func theLastProgressIsAlwaysReportedBeforeCompletion() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.responseReceived(info(nil), now: 0)
        let slow = ProgressThrottle(minimumFraction: 0, minimumIntervalNanos: 1_000_000_000)
        #expect(op.bodyReceived(total: 10, now: 1, throttle: slow) == [.emitProgress(a, received: 10, expected: nil)], "the first bytes")
        #expect(op.bodyReceived(total: 20, now: 2, throttle: slow) == [])
        #expect(op.attemptSucceeded(now: 3).first == .emitProgress(a, received: 20, expected: nil))
    }

    @Test func aLateJoinerIsBroughtUpToDate() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.responseReceived(info(), now: 0)
        _ = op.bodyReceived(total: 50, now: 1, throttle: noThrottle)
        #expect(op.join(b, priority: .low) == [.emitStarted(b), .emitResponse(b, info()), .emitProgress(b, received: 50, expected: 100)])
        #expect(op.bodyReceived(total: 100, now: 2, throttle: noThrottle) == [
            .emitProgress(a, received: 100, expected: 100), .emitProgress(b, received: 100, expected: 100),
        ])
        #expect(op.attemptSucceeded(now: 3) == [.recordSuccess, .enterDelivery, .process(a), .process(b)])
    }

    @Test func queuedPriorityIsTheHighestOfLiveTokensAndFollowsCancelsAndChanges() {
        var op = FetchOperation(token: a, priority: .low)
        #expect(op.join(b, priority: .high) == [.setQueuePriority(.high)])
        #expect(op.join(c, priority: .normal) == [])
        #expect(op.setPriority(c, .veryHigh) == [.setQueuePriority(.veryHigh)])
        #expect(op.cancel(c) == [.emitCancelled(c), .setQueuePriority(.high)])
        #expect(op.cancel(b) == [.emitCancelled(b), .setQueuePriority(.low)])
        #expect(op.cancel(a) == [.emitCancelled(a), .leaveQueue, .finished])
        #expect(op.state == .finished)
    }

    @Test func cancellingOneTokenOfARunningFetchLeavesTheOthers() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .normal)
        _ = op.start()
        #expect(op.cancel(a) == [.emitCancelled(a)])
        #expect(op.cancel(a) == [], "a second cancel of the same token does nothing")
        #expect(op.state == .running(attempt: 1))
        #expect(op.cancel(b) == [.emitCancelled(b), .cancelAttempt, .leaveQueue, .finished])
    }

    @Test func transientFailuresAreRetriedWithBackoffThenFail() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let failure = DownloadFailure.network(.connection, "refused")
        #expect(op.attemptFailed(failure, retryPolicy: retries, jitter: 0) == [.scheduleRetry(attempt: 2, delayMs: 50)])
        #expect(op.state == .waitingToRetry(attempt: 2))
        #expect(op.join(b, priority: .normal) == [.emitStarted(b)])
        #expect(op.retryTimerFired() == [.startAttempt(2)])
        #expect(op.attemptFailed(failure, retryPolicy: retries, jitter: 1) == [.scheduleRetry(attempt: 3, delayMs: 200)])
        _ = op.retryTimerFired()
        // The failure after retries says how many attempts there were and why each ended.
        let reported = DownloadFailure.afterAttempts(failure, attempts: 3, earlier: [failure, failure])
        #expect(op.attemptFailed(failure, retryPolicy: retries, jitter: 0) == [
            .leaveQueue, .emitFailure(a, reported), .emitFailure(b, reported), .finished,
        ])
    }

    @Test func retryAfterIsHonoured() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let actions = op.attemptFailed(.statusCode(429, retryAfterSeconds: 0.7), retryPolicy: retries, jitter: 0)
        #expect(actions == [.scheduleRetry(attempt: 2, delayMs: 700)])
    }

    @Test func permanentFailuresAreNotRetriedAndBlockTheURL() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let failure = DownloadFailure.statusCode(404, retryAfterSeconds: nil)
        #expect(op.attemptFailed(failure, retryPolicy: retries, jitter: 0) == [
            .leaveQueue, .recordFailure(failure), .emitFailure(a, failure), .finished,
        ])
    }

    @Test func aFailureAfterTheResponseWasReportedIsNotRetried() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.responseReceived(info(), now: 0)
        _ = op.bodyReceived(total: 10, now: 1, throttle: noThrottle)
        let failure = DownloadFailure.network(.truncated, "reset")
        #expect(op.attemptFailed(failure, retryPolicy: retries, jitter: 0) == [.leaveQueue, .emitFailure(a, failure), .finished])
    }

    @Test func aResumableFailureAfterTheResponseIsRetriedAndProgressGoesOn() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.responseReceived(info(1000), now: 0)
        _ = op.bodyReceived(total: 600, now: 1, throttle: noThrottle)
        let cut = DownloadFailure.network(.truncated, "cut")
        #expect(op.attemptFailed(cut, retryPolicy: retries, jitter: 0, resumable: true) == [.scheduleRetry(attempt: 2, delayMs: 50)])
        #expect(op.retryTimerFired() == [.startAttempt(2)])
        // The resumed attempt's 206: no second response event, progress goes on from 600.
        #expect(op.responseReceived(info(400), now: 2, continuing: true) == [])
        #expect(op.bodyReceived(total: 1000, now: 3, throttle: noThrottle) == [.emitProgress(a, received: 1000, expected: 1000)])
        #expect(op.attemptSucceeded(now: 4) == [.recordSuccess, .enterDelivery, .process(a)])
        #expect(op.response?.expectedBytes == 1000, "the first response stays the fetch's")
    }

    @Test func aRetryThatStartsOverNeverReportsLessThanBefore() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.responseReceived(info(1000), now: 0)
        _ = op.bodyReceived(total: 600, now: 1, throttle: noThrottle)
        _ = op.attemptFailed(.network(.reset, "cut"), retryPolicy: retries, jitter: 0, resumable: true)
        _ = op.retryTimerFired()
        #expect(op.responseReceived(info(1000), now: 2) == [], "the whole body again: no second response event")
        #expect(op.bodyReceived(total: 300, now: 3, throttle: noThrottle) == [], "below what was reported")
        #expect(op.bodyReceived(total: 700, now: 4, throttle: noThrottle) == [.emitProgress(a, received: 700, expected: 1000)])
    }

    @Test func cancelWhileWaitingToRetryStopsTheTimer() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.attemptFailed(.network(.timeout, "t"), retryPolicy: retries, jitter: 0)
        #expect(op.cancel(a) == [.emitCancelled(a), .cancelRetryTimer, .leaveQueue, .finished])
        #expect(op.retryTimerFired() == [])
    }

    @Test func cancelDuringDeliveryEndsThatTokenAndItsProcessingResultIsDropped() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .normal)
        _ = op.start()
        _ = op.responseReceived(info(), now: 0)
        _ = op.bodyReceived(total: 100, now: 1, throttle: noThrottle)
        _ = op.attemptSucceeded(now: 2)
        #expect(op.cancel(a) == [.emitCancelled(a)])
        #expect(op.tokenProcessed(a).live == false)
        let (live, actions) = op.tokenProcessed(b)
        #expect(live)
        // However b's processing ended (its decode may have failed), the URL is not blocked.
        #expect(actions == [.finished])
    }

    @Test func lateEventsAfterFinishDoNothing() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = op.cancel(a)
        #expect(op.responseReceived(info(), now: 0) == [])
        #expect(op.bodyReceived(total: 1, now: 0, throttle: noThrottle) == [])
        #expect(op.attemptSucceeded(now: 0) == [])
        #expect(op.attemptFailed(.notModified, retryPolicy: retries, jitter: 0) == [])
    }

    /// Random sequences of events: every token that joined ends exactly once, and nothing is
    /// emitted for a token after its end.
    @Test(arguments: Array(1...20))
    func everyTokenEndsExactlyOnce(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        var op = FetchOperation(token: .int(0), priority: .normal)
        var joined: Set<DownloadToken> = [.int(0)]
        var ended: [DownloadToken: Int] = [:]
        var processing: Set<DownloadToken> = []
        var nextToken: Int64 = 1
        var total: Int64 = 0
        var left = 0
        func apply(_ actions: [FetchOperation.Action]) {
            for action in actions {
                switch action {
                case .leaveQueue, .enterDelivery:
                    left += 1
                case .emitCancelled(let t), .emitFailure(let t, _):
                    ended[t, default: 0] += 1
                case .emitStarted(let t), .emitResponse(let t, _), .emitProgress(let t, _, _):
                    #expect(ended[t] == nil, "event after the end of \(t)")
                case .process(let t):
                    processing.insert(t)
                default: break
                }
            }
        }
        for _ in 0..<60 where op.state != .finished {
            switch rng.next() % 9 {
            case 0 where op.acceptsTokens:
                let t = DownloadToken.int(nextToken)
                nextToken += 1
                joined.insert(t)
                apply(op.join(t, priority: DownloadPriority(rawValue: Int(rng.next() % 5))!))
            case 1:
                if let t = joined.subtracting(ended.keys).randomElement(using: &rng) { apply(op.cancel(t)) }
            case 2: apply(op.start())
            case 3: apply(op.responseReceived(info(1000), now: 0))
            case 4:
                total += Int64(rng.next() % 300)
                apply(op.bodyReceived(total: total, now: UInt64(total), throttle: noThrottle))
            case 5: apply(op.attemptSucceeded(now: 0))
            case 6: apply(op.attemptFailed(.network(.reset, "x"), retryPolicy: retries, jitter: 0.5))
            case 7: apply(op.retryTimerFired())
            default:
                if let t = processing.randomElement(using: &rng) {
                    processing.remove(t)
                    let (live, actions) = op.tokenProcessed(t)
                    if live { ended[t, default: 0] += 1 }
                    apply(actions)
                }
            }
        }
        // Wind down: cancel whatever is left, then finish processing.
        for t in joined.subtracting(ended.keys) { apply(op.cancel(t)) }
        for t in processing {
            let (live, actions) = op.tokenProcessed(t)
            if live { ended[t, default: 0] += 1 }
            apply(actions)
        }
        #expect(Set(ended.keys) == joined)
        #expect(ended.values.allSatisfy { $0 == 1 })
        #expect(op.state == .finished)
        #expect(left == 1, "a fetch leaves the queue once: when its body is in, or when nothing of it is left")
    }
}

/// Per-download retry budgets and deadlines on a shared fetch, without I/O.
@Suite struct FetchOperationLimitTests {
    let a = DownloadToken.string("a")
    let b = DownloadToken.string("b")
    let retries = RetryPolicy(maxRetries: 2, baseDelayMs: 100, maxDelayMs: 10_000)
    let reset = DownloadFailure.network(.reset, "connection reset")
    let unavailable = DownloadFailure.statusCode(503, retryAfterSeconds: nil)

    /// A token with no retries fails at the first transient failure; the fetch retries for the
    /// other, whose final failure carries every attempt's.
    @Test func aTokenOutOfRetriesFailsAloneAndTheLastCarriesEveryAttempt() {
        var op = FetchOperation(token: a, priority: .normal, limits: .init(maxRetries: 0))
        _ = op.join(b, priority: .normal)
        _ = op.start()
        #expect(op.attemptFailed(reset, retryPolicy: retries, jitter: 1) == [
            .emitFailure(a, reset), .scheduleRetry(attempt: 2, delayMs: 100),
        ])
        #expect(op.tokens.map(\.token) == [b])
        #expect(op.retryTimerFired() == [.startAttempt(2)])
        #expect(op.attemptFailed(unavailable, retryPolicy: retries, jitter: 1) == [.scheduleRetry(attempt: 3, delayMs: 200)])
        _ = op.retryTimerFired()
        let last = DownloadFailure.statusCode(502, retryAfterSeconds: nil)
        #expect(op.attemptFailed(last, retryPolicy: retries, jitter: 1) == [
            .leaveQueue, .emitFailure(b, .afterAttempts(last, attempts: 3, earlier: [reset, unavailable])), .finished,
        ])
        #expect(op.failedAttempts == [reset, unavailable, last])
    }

    /// A token may retry more than the worker's default, with its own delay; when tokens share a
    /// fetch the shortest delay wins.
    @Test func aTokensOwnBudgetAndDelayApply() {
        var op = FetchOperation(token: a, priority: .normal, limits: .init(maxRetries: 5, retryDelayMs: 1000))
        _ = op.start()
        for attempt in 1...5 {
            let delay = min(1000 << (attempt - 1), 10_000)
            #expect(op.attemptFailed(reset, retryPolicy: retries, jitter: 1) == [.scheduleRetry(attempt: attempt + 1, delayMs: Int64(delay))])
            _ = op.retryTimerFired()
        }
        #expect(op.attemptFailed(reset, retryPolicy: retries, jitter: 1).contains(.finished))

        var shared = FetchOperation(token: a, priority: .normal, limits: .init(retryDelayMs: 5000))
        _ = shared.join(b, priority: .normal, limits: .init(retryDelayMs: 40))
        _ = shared.start()
        #expect(shared.attemptFailed(reset, retryPolicy: retries, jitter: 1) == [.scheduleRetry(attempt: 2, delayMs: 40)])
    }

    /// A deadline ends its token alone, with the attempts so far; the fetch stops with its last
    /// token; once the body is complete the deadline no longer applies.
    @Test func aDeadlineEndsItsTokenAloneUntilTheBodyIsComplete() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .normal)
        _ = op.start()
        let deadline = DownloadFailure.network(.deadline, "no result within the deadline of 500 ms")
        #expect(op.deadlineReached(a, deadlineMs: 500) == [.emitFailure(a, .afterAttempts(deadline, attempts: 1, earlier: []))])
        #expect(op.deadlineReached(a, deadlineMs: 500) == [], "once")
        _ = op.attemptFailed(reset, retryPolicy: retries, jitter: 0)
        let waiting = DownloadFailure.network(.deadline, "no result within the deadline of 900 ms")
        #expect(op.deadlineReached(b, deadlineMs: 900) == [
            .emitFailure(b, .afterAttempts(waiting, attempts: 1, earlier: [reset])), .cancelRetryTimer, .leaveQueue, .finished,
        ])

        var done = FetchOperation(token: a, priority: .normal)
        _ = done.start()
        _ = done.attemptSucceeded(now: 0)
        #expect(done.deadlineReached(a, deadlineMs: 10) == [])
    }
}
