@testable import ImageDownloader
import NIOCore
import TestSupport
import Testing

/// Drives a `FetchOperation` as the downloader would, without I/O.
struct MachineDriver {
    static let noThrottle = ProgressThrottle(minimumFraction: 0, minimumIntervalNanos: 0)
    static let retries = RetryPolicy(maxRetries: 2, baseDelayMs: 100, maxDelayMs: 1000)

    static func info(_ expected: Int64? = 100, status: Int = 200) -> ResponseInfo {
        ResponseInfo(status: status, expectedBytes: expected, mimeType: "image/png", finalURL: "http://x/y", httpVersion: "1.1")
    }

    static func head(_ expected: Int64? = 100, validator: String? = nil) -> FetchOperation.Head {
        FetchOperation.Head(info: info(expected), validator: validator)
    }

    static func bytes(_ count: Int, from start: Int = 0) -> ByteBuffer {
        ByteBuffer(bytes: (start..<start + count).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    }

    /// The current attempt's number (the machine is running).
    static func attempt(_ op: FetchOperation) -> Int {
        guard case .running(let number) = op.state else { return 0 }
        return number
    }

    /// The loader's task began and the head `head` came.
    static func respond(_ op: inout FetchOperation, _ head: FetchOperation.Head, now: UInt64 = 0) -> FetchOperation.HeadAction {
        let number = attempt(op)
        _ = op.attemptBegan(number, now: now)
        return op.headReceived(number, head, maxBodyBytes: 1 << 30, now: now)
    }

    static func receive(_ op: inout FetchOperation, _ chunk: ByteBuffer, now: UInt64 = 0, throttle: ProgressThrottle = noThrottle) -> FetchOperation.BodyAction {
        op.bodyReceived(attempt(op), chunk, maxBodyBytes: 1 << 30, now: now, throttle: throttle)
    }

    static func end(_ op: inout FetchOperation, _ error: (any Error)? = nil, jitter: Double = 0, now: UInt64 = 0) -> FetchOperation.EndAction {
        op.attemptEnded(attempt(op), error: error, retryPolicy: retries, jitter: jitter, now: now)
    }
}

@Suite struct FetchOperationTests {
    typealias D = MachineDriver
    let a = DownloadToken.string("a")
    let b = DownloadToken.string("b")
    let c = DownloadToken.int(3)
    let reset = DownloadFailure.network(.reset, "cut")

    func retry(_ attempt: Int, _ delayMs: Int64, cause: DownloadFailure, failure: DownloadFailure? = nil, failing: [DownloadToken] = [])
        -> FetchOperation.EndAction
    {
        .retry(cause: cause, failing: failing, failure: failure ?? cause, attempt: attempt, delayMs: delayMs)
    }

    @Test func aHostAdmissionIsReportedOnceForItsAttemptEvenAfterACancel() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        // Refused, or a file: nothing to report.
        op.attemptLaunched(1, admittedTo: nil)
        #expect(op.takeHostAdmission(of: 1) == nil)
        // Admitted with no host failing: the key is made only if needed.
        op.attemptLaunched(1, admittedTo: .some(nil))
        #expect(op.takeHostAdmission(of: 2) == nil)
        #expect(op.takeHostAdmission(of: 1) == .init(attempt: 1, host: nil))
        #expect(op.takeHostAdmission(of: 1) == nil)
        // The next attempt's admission replaces one never reported.
        op.attemptLaunched(1, admittedTo: "a.example:80")
        guard case .retry = D.end(&op, reset), let launch = op.retryTimerFired() else { Issue.record("no retry"); return }
        op.attemptLaunched(launch.attempt, admittedTo: "b.example:80")
        #expect(op.takeHostAdmission(of: 1) == nil)
        // Cancelled with the attempt in flight: the fetch's end still finds it (a probe abandoned).
        _ = op.cancel(a)
        #expect(op.state == .finished)
        #expect(op.takeHostAdmission() == .init(attempt: 2, host: "b.example:80"))
        #expect(op.takeHostAdmission() == nil)
    }

    @Test func aSuccessfulFetchFromQueueToFinished() {
        var op = FetchOperation(token: a, priority: .normal)
        #expect(op.start() == .init(started: [a], launch: .init(attempt: 1, resume: nil, discardsBody: false)))
        #expect(op.start() == nil, "once")
        #expect(D.respond(&op, D.head()) == .accept(events: [.response(a, D.info()), .progress(a, received: 0, expected: 100)], discardsBody: false))
        #expect(D.receive(&op, D.bytes(40)) == .accept(offset: 0, events: [.progress(a, received: 40, expected: 100)]))
        #expect(D.receive(&op, D.bytes(60, from: 40)) == .accept(offset: 40, events: [.progress(a, received: 100, expected: 100)]))
        #expect(op.receivedBytes == 100)
        // The slot is given back once the body is in, before the body is processed (decoded,
        // written): the delivery stage is the downloader's to bound (`maxDeliveringFetches`).
        #expect(D.end(&op) == .deliver(.init(progress: [], response: D.info(), body: D.bytes(100), tokens: [a])))
        #expect(op.state == .delivering)
        #expect(op.receivedBytes == 100 && op.response == D.info(), "status still shows the fetch")
        #expect(!op.acceptsTokens)
        #expect(op.tokenProcessed(a) == .endToken(fetchFinished: true))
        #expect(op.state == .finished)
    }

    @Test func theLastProgressIsAlwaysReportedBeforeCompletion() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head(nil))
        let slow = ProgressThrottle(minimumFraction: 0, minimumIntervalNanos: 1_000_000_000)
        #expect(D.receive(&op, D.bytes(10), now: 1, throttle: slow) == .accept(offset: 0, events: [.progress(a, received: 10, expected: nil)]))
        #expect(D.receive(&op, D.bytes(10), now: 2, throttle: slow) == .accept(offset: 10, events: []))
        guard case .deliver(let delivery) = D.end(&op) else { Issue.record("not delivered"); return }
        #expect(delivery.progress == [.progress(a, received: 20, expected: nil)])
    }

    @Test func aLateJoinerIsBroughtUpToDate() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head())
        _ = D.receive(&op, D.bytes(50))
        #expect(op.join(b, priority: .low) == .catchUp([.started(b), .response(b, D.info()), .progress(b, received: 50, expected: 100)]))
        #expect(D.receive(&op, D.bytes(50)) == .accept(offset: 50, events: [
            .progress(a, received: 100, expected: 100), .progress(b, received: 100, expected: 100),
        ]))
        #expect(!op.bodyDelivered)
        guard case .deliver(let delivery) = D.end(&op) else { Issue.record("not delivered"); return }
        #expect(delivery.tokens == [a, b])
        #expect(op.bodyDelivered, "the fetch's follower is told complete, never ended")
    }

    /// The first token to stream a running fetch's body gets the body so far with its catch-up;
    /// a second streamer, or one that joins before any byte, gets none (the follower has it).
    @Test func theFirstStreamerToJoinGetsTheBodySoFar() {
        var op = FetchOperation(token: a, priority: .normal)
        #expect(!op.streamsBody)
        _ = op.start()
        _ = D.respond(&op, D.head())
        _ = D.receive(&op, D.bytes(30))
        guard case .catchUp(_, let body) = op.join(b, priority: .normal, streamsBody: true) else {
            Issue.record("no catch-up")
            return
        }
        #expect(body?.readableBytes == 30 && op.streamsBody)
        guard case .catchUp(_, nil) = op.join(c, priority: .normal, streamsBody: true) else {
            Issue.record("a second streamer was sent the body again")
            return
        }
        var early = FetchOperation(token: a, priority: .normal, streamsBody: true)
        _ = early.start()
        #expect(early.streamsBody)
        guard case .catchUp(_, nil) = early.join(b, priority: .normal, streamsBody: true) else {
            Issue.record("a body before any byte")
            return
        }
    }

    @Test func queuedPriorityIsTheHighestOfLiveTokensAndFollowsCancelsAndChanges() {
        var op = FetchOperation(token: a, priority: .low)
        #expect(op.join(b, priority: .high) == .setQueuePriority(.high))
        #expect(op.join(c, priority: .normal) == FetchOperation.JoinAction.none)
        #expect(op.setPriority(c, .veryHigh) == .veryHigh)
        #expect(op.cancel(c) == .init(token: c, failure: nil, then: .setQueuePriority(.high)))
        #expect(op.cancel(b) == .init(token: b, failure: nil, then: .setQueuePriority(.low)))
        #expect(op.cancel(a) == .init(token: a, failure: nil, then: .dropQueued))
        #expect(op.state == .finished)
    }

    @Test func cancellingOneTokenOfARunningFetchLeavesTheOthers() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .normal)
        _ = op.start()
        #expect(op.cancel(a) == .init(token: a, failure: nil, then: .none))
        #expect(op.cancel(a) == nil, "a second cancel of the same token does nothing")
        #expect(op.state == .running(attempt: 1))
        #expect(op.cancel(b) == .init(token: b, failure: nil, then: .stopTransfer))
    }

    @Test func transientFailuresAreRetriedWithBackoffThenFail() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let failure = DownloadFailure.network(.connection, "refused")
        #expect(D.end(&op, failure) == retry(2, 50, cause: failure))
        #expect(op.state == .waitingToRetry(attempt: 2))
        #expect(op.join(b, priority: .normal) == .catchUp([.started(b)]))
        #expect(op.retryTimerFired() == .init(attempt: 2, resume: nil, discardsBody: false))
        let second = DownloadFailure.afterAttempts(failure, attempts: 2, earlier: [failure])
        #expect(D.end(&op, failure, jitter: 1) == retry(3, 200, cause: failure, failure: second))
        _ = op.retryTimerFired()
        // The failure after retries says how many attempts there were and why each ended.
        let reported = DownloadFailure.afterAttempts(failure, attempts: 3, earlier: [failure, failure])
        #expect(D.end(&op, failure) == .fail(cause: failure, tokens: [a, b], failure: reported, blocksURL: false))
        #expect(op.state == .finished && !op.bodyDelivered)
    }

    @Test func retryAfterIsHonoured() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let busy = DownloadFailure.statusCode(429, retryAfterSeconds: 0.7)
        let began = op.attemptBegan(1, now: 0)
        #expect(began)
        #expect(op.headReceived(1, .init(info: D.info(status: 429), retryAfterSeconds: 0.7), maxBodyBytes: 100, now: 0) == .refuse(busy))
        #expect(D.end(&op, busy) == retry(2, 700, cause: busy))
    }

    @Test func permanentFailuresAreNotRetriedAndBlockTheURL() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let failure = DownloadFailure.statusCode(404, retryAfterSeconds: nil)
        #expect(D.end(&op, failure) == .fail(cause: failure, tokens: [a], failure: failure, blocksURL: true))
    }

    @Test func aFailurePartWayWithoutAValidatorIsNotRetried() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head())
        _ = D.receive(&op, D.bytes(10))
        #expect(D.end(&op, reset) == .fail(cause: reset, tokens: [a], failure: reset, blocksURL: false))
    }

    @Test func aCutBodyWithAValidatorIsResumedAndProgressGoesOn() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head(1000, validator: "\"v1\""))
        _ = D.receive(&op, D.bytes(600))
        #expect(D.end(&op, reset) == retry(2, 50, cause: reset))
        // Bytes kept to resume from keep the queue slot: the bodies held stay within the running limit.
        #expect(op.keepsSlotWhileWaiting)
        let resume = ResumePoint(offset: 600, validator: "\"v1\"", total: 1000)
        #expect(op.retryTimerFired() == .init(attempt: 2, resume: resume, discardsBody: false))
        #expect(!op.keepsSlotWhileWaiting, "running")
        // The resumed attempt's 206: no second response event, progress goes on from 600.
        let partial = FetchOperation.Head(info: D.info(400, status: 206), contentRange: "bytes 600-999/1000")
        #expect(D.respond(&op, partial) == .accept(events: [], discardsBody: false))
        #expect(D.receive(&op, D.bytes(400, from: 600)) == .accept(offset: 600, events: [.progress(a, received: 1000, expected: 1000)]))
        #expect(D.end(&op) == .deliver(.init(progress: [], response: D.info(1000), body: D.bytes(1000), tokens: [a])))
    }

    @Test func aRetryThatStartsOverNeverReportsLessThanBefore() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head(1000, validator: "\"v1\""))
        _ = D.receive(&op, D.bytes(600))
        _ = D.end(&op, reset)
        _ = op.retryTimerFired()
        #expect(D.respond(&op, D.head(1000)) == .accept(events: [], discardsBody: true), "a 200 to the resume: the body starts over, quietly")
        #expect(D.receive(&op, D.bytes(300)) == .accept(offset: 0, events: []), "below what was reported")
        #expect(D.receive(&op, D.bytes(400, from: 300)) == .accept(offset: 300, events: [.progress(a, received: 700, expected: 1000)]))
    }

    /// With nothing kept, a fetch waiting to retry lends its queue slot; the queue's start runs
    /// its next attempt (its tokens started long ago). Its priority still follows its tokens.
    @Test func aRetryWithNothingKeptLendsItsSlotAndTheQueueStartsTheNextAttempt() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .low)
        _ = op.start()
        #expect(!op.keepsSlotWhileWaiting, "running: not waiting")
        _ = D.end(&op, DownloadFailure.network(.connection, "refused"))
        #expect(!op.keepsSlotWhileWaiting)
        #expect(op.setPriority(b, .high) == .high)
        #expect(op.cancel(b) == .init(token: b, failure: nil, then: .setQueuePriority(.normal)))
        #expect(op.start() == .init(started: [], launch: .init(attempt: 2, resume: nil, discardsBody: false)))
        #expect(op.state == .running(attempt: 2))
        #expect(op.start() == nil, "already running")
        #expect(op.setPriority(a, .veryHigh) == nil, "running: the queue has nothing to reorder")
    }

    @Test func cancelWhileWaitingToRetryStopsTheTimer() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        _ = D.end(&op, DownloadFailure.network(.timeout, "t"))
        #expect(op.cancel(a) == .init(token: a, failure: nil, then: .stopRetryTimer))
        #expect(op.retryTimerFired() == nil)
    }

    @Test func cancelDuringDeliveryEndsThatTokenAndItsProcessingResultIsDropped() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head())
        _ = D.receive(&op, D.bytes(100))
        _ = D.end(&op)
        #expect(op.cancel(a) == .init(token: a, failure: nil, then: .none))
        #expect(op.tokenProcessed(a) == .dropResult)
        // However b's processing ended (its decode may have failed), the URL is not blocked.
        #expect(op.tokenProcessed(b) == .endToken(fetchFinished: true))
    }

    @Test func eventsOfAnotherAttemptOrAfterTheEndAreStale() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        #expect(op.headReceived(2, D.head(), maxBodyBytes: 100, now: 0) == .stale, "not the current attempt")
        _ = op.cancel(a)
        #expect(op.attemptBegan(1, now: 0) == false)
        #expect(op.headReceived(1, D.head(), maxBodyBytes: 100, now: 0) == .stale)
        #expect(op.bodyReceived(1, D.bytes(1), maxBodyBytes: 100, now: 0, throttle: D.noThrottle) == .stale)
        #expect(op.attemptEnded(1, error: nil, retryPolicy: D.retries, jitter: 0, now: 0) == .stale)
        #expect(op.watchdogWoke(1, now: 0, timeoutMs: 1) == .stop)
    }

    /// The idle watchdog stops the current attempt; the attempt then fails by timeout, whatever
    /// the loader threw on its way out, and is retried.
    @Test func theWatchdogTimesOutTheCurrentAttemptOnly() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.start()
        let began = op.attemptBegan(1, now: 0)
        #expect(began)
        #expect(op.watchdogWoke(1, now: 5_000_000, timeoutMs: 10) == .checkAt(10_000_000))
        #expect(op.watchdogWoke(1, now: 10_000_000, timeoutMs: 10) == .stopTransfer)
        #expect(!op.isTransferring(1))
        #expect(op.headReceived(1, D.head(), maxBodyBytes: 100, now: 0) == .stale, "a head after the stop is not taken")
        let timeout = DownloadFailure.network(.timeout, "no data for 10 ms")
        #expect(D.end(&op, CancellationError()) == retry(2, 50, cause: timeout))
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
        var left = 0
        func emitted(_ events: [FetchOperation.TokenEvent]) {
            for event in events {
                switch event {
                case .started(let t), .response(let t, _), .progress(let t, _, _):
                    #expect(ended[t] == nil, "event after the end of \(t)")
                }
            }
        }
        func removed(_ removal: FetchOperation.Removal?) {
            guard let removal else { return }
            ended[removal.token, default: 0] += 1
            switch removal.then {
            case .dropQueued, .stopTransfer, .stopRetryTimer: left += 1
            case .none, .setQueuePriority, .endDelivery: break
            }
        }
        for _ in 0..<80 where op.state != .finished {
            switch rng.next() % 9 {
            case 0 where op.acceptsTokens:
                let t = DownloadToken.int(nextToken)
                nextToken += 1
                joined.insert(t)
                if case .catchUp(let events, _) = op.join(t, priority: DownloadPriority(rawValue: Int(rng.next() % 5))!) { emitted(events) }
            case 1:
                if let t = joined.subtracting(ended.keys).randomElement(using: &rng) { removed(op.cancel(t)) }
            case 2:
                if let start = op.start() { emitted(start.started.map { .started($0) }) }
            case 3:
                if case .accept(let events, _) = D.respond(&op, D.head(nil, validator: rng.next() % 2 == 0 ? "\"v\"" : nil)) { emitted(events) }
            case 4:
                if case .accept(_, let events) = D.receive(&op, D.bytes(Int(rng.next() % 300))) { emitted(events) }
            case 5, 6:
                switch D.end(&op, rng.next() % 9 == 5 ? nil : reset, jitter: 0.5) {
                case .stale: break
                case .retry(_, let failing, _, _, _):
                    for t in failing { ended[t, default: 0] += 1 }
                case .fail(_, let tokens, _, _):
                    left += 1
                    for t in tokens { ended[t, default: 0] += 1 }
                case .deliver(let delivery):
                    left += 1
                    emitted(delivery.progress)
                    processing.formUnion(delivery.tokens)
                }
            case 7:
                _ = op.retryTimerFired()
            default:
                if let t = processing.randomElement(using: &rng) {
                    processing.remove(t)
                    if case .endToken = op.tokenProcessed(t) { ended[t, default: 0] += 1 }
                }
            }
        }
        // Wind down: cancel whatever is left, then finish processing.
        for t in joined.subtracting(ended.keys) { removed(op.cancel(t)) }
        for t in processing {
            if case .endToken = op.tokenProcessed(t) { ended[t, default: 0] += 1 }
        }
        #expect(Set(ended.keys) == joined)
        #expect(ended.values.allSatisfy { $0 == 1 })
        #expect(op.state == .finished)
        #expect(left == 1, "a fetch leaves the queue once: when its body is in, or when nothing of it is left")
    }
}

/// Per-download retry budgets and deadlines on a shared fetch, without I/O.
@Suite struct FetchOperationLimitTests {
    typealias D = MachineDriver
    let a = DownloadToken.string("a")
    let b = DownloadToken.string("b")
    let retries = RetryPolicy(maxRetries: 2, baseDelayMs: 100, maxDelayMs: 10_000)
    let reset = DownloadFailure.network(.reset, "connection reset")
    let unavailable = DownloadFailure.statusCode(503, retryAfterSeconds: nil)

    func end(_ op: inout FetchOperation, _ failure: DownloadFailure) -> FetchOperation.EndAction {
        op.attemptEnded(D.attempt(op), error: failure, retryPolicy: retries, jitter: 1, now: 0)
    }

    /// A token with no retries fails at the first transient failure; the fetch retries for the
    /// other, whose final failure carries every attempt's.
    @Test func aTokenOutOfRetriesFailsAloneAndTheLastCarriesEveryAttempt() {
        var op = FetchOperation(token: a, priority: .normal, limits: .init(maxRetries: 0))
        _ = op.join(b, priority: .normal)
        _ = op.start()
        #expect(end(&op, reset) == .retry(cause: reset, failing: [a], failure: reset, attempt: 2, delayMs: 100))
        #expect(op.tokens.map(\.token) == [b])
        #expect(op.retryTimerFired() == .init(attempt: 2, resume: nil, discardsBody: false))
        #expect(end(&op, unavailable) == .retry(
            cause: unavailable, failing: [], failure: .afterAttempts(unavailable, attempts: 2, earlier: [reset]), attempt: 3, delayMs: 200))
        _ = op.retryTimerFired()
        let last = DownloadFailure.statusCode(502, retryAfterSeconds: nil)
        #expect(end(&op, last) == .fail(
            cause: last, tokens: [b], failure: .afterAttempts(last, attempts: 3, earlier: [reset, unavailable]), blocksURL: false))
    }

    /// A token may retry more than the worker's default, with its own delay; when tokens share a
    /// fetch the shortest delay wins.
    @Test func aTokensOwnBudgetAndDelayApply() {
        var op = FetchOperation(token: a, priority: .normal, limits: .init(maxRetries: 5, retryDelayMs: 1000))
        _ = op.start()
        for attempt in 1...5 {
            guard case .retry(_, _, _, let next, let delay) = end(&op, reset) else {
                Issue.record("attempt \(attempt) was not retried")
                return
            }
            #expect(next == attempt + 1 && delay == Int64(min(1000 << (attempt - 1), 10_000)))
            _ = op.retryTimerFired()
        }
        guard case .fail = end(&op, reset) else {
            Issue.record("a sixth failure was retried")
            return
        }

        var shared = FetchOperation(token: a, priority: .normal, limits: .init(retryDelayMs: 5000))
        _ = shared.join(b, priority: .normal, limits: .init(retryDelayMs: 40))
        _ = shared.start()
        #expect(end(&shared, reset) == .retry(cause: reset, failing: [], failure: reset, attempt: 2, delayMs: 40))
    }

    /// A deadline ends its token alone, with the attempts so far; the fetch stops with its last
    /// token; once the body is complete the deadline no longer applies.
    @Test func aDeadlineEndsItsTokenAloneUntilTheBodyIsComplete() {
        var op = FetchOperation(token: a, priority: .normal)
        _ = op.join(b, priority: .normal)
        _ = op.start()
        let deadline = DownloadFailure.network(.deadline, "no result within the deadline of 500 ms")
        #expect(op.deadlineReached(a, deadlineMs: 500) == .init(token: a, failure: .afterAttempts(deadline, attempts: 1, earlier: []), then: .none))
        #expect(op.deadlineReached(a, deadlineMs: 500) == nil, "once")
        _ = end(&op, reset)
        let waiting = DownloadFailure.network(.deadline, "no result within the deadline of 900 ms")
        #expect(op.deadlineReached(b, deadlineMs: 900) == .init(
            token: b, failure: .afterAttempts(waiting, attempts: 1, earlier: [reset]), then: .stopRetryTimer))

        var done = FetchOperation(token: a, priority: .normal)
        _ = done.start()
        _ = D.respond(&done, D.head(1))
        _ = D.receive(&done, D.bytes(1))
        _ = D.end(&done)
        #expect(done.state == .delivering)
        #expect(done.deadlineReached(a, deadlineMs: 10) == nil)
    }
}
