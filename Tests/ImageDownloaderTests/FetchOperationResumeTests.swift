@testable import ImageDownloader
import NIOCore
import TestSupport
import Testing

/// Resume and retry as the fetch machine decides them, without I/O: a simulated server cuts the
/// body at random points (seeded) and answers each attempt's `Range` as it is told to behave.
@Suite struct FetchOperationResumeTests {
    typealias D = MachineDriver
    let token = DownloadToken.string("r")
    let validator = "\"v1\""
    let retries = RetryPolicy(maxRetries: 8, baseDelayMs: 1, maxDelayMs: 5)

    enum Server {
        /// `206` from the asked offset.
        case resumes
        /// A whole `200` whatever was asked.
        case ignoresRanges
        /// A `206` that starts one byte off.
        case wrongRange
    }

    struct Run {
        var delivered: ByteBuffer?
        var resumes: [ResumePoint?] = []
        var progress: [Int64] = []
        var responses = 0
        var discarded = 0
        var failure: DownloadFailure?
    }

    /// Fetches `body`, cut after each of `cuts` (bytes received in that attempt), then whole.
    func fetch(_ body: [UInt8], cuts: [Int], server: Server, rng: inout SplitMix) -> Run {
        var op = FetchOperation(token: token, priority: .normal)
        var run = Run()
        func note(_ events: [FetchOperation.TokenEvent]) {
            for event in events {
                switch event {
                case .response: run.responses += 1
                case .progress(_, let received, _): run.progress.append(received)
                case .started: break
                }
            }
        }
        var launch = op.start()!.launch
        for attempt in 0...cuts.count {
            run.resumes.append(launch.resume)
            if launch.discardsBody { run.discarded += 1 }
            var from = 0
            let head: FetchOperation.Head
            if let resume = launch.resume, server != .ignoresRanges {
                from = Int(resume.offset) + (server == .wrongRange ? 1 : 0)
                let info = D.info(Int64(body.count - from), status: 206)
                head = .init(info: info, contentRange: "bytes \(from)-\(body.count - 1)/\(body.count)", validator: validator)
            } else {
                head = .init(info: D.info(Int64(body.count)), validator: validator)
            }
            _ = op.attemptBegan(launch.attempt, now: 0)
            switch op.headReceived(launch.attempt, head, maxBodyBytes: 1 << 30, now: 0) {
            case .accept(let events, let discards):
                note(events)
                if discards { run.discarded += 1 }
                // What this attempt sends before its cut (or to the end).
                let end = attempt < cuts.count ? min(body.count, from + cuts[attempt]) : body.count
                var at = from
                while at < end {
                    let size = min(end - at, 1 + Int(rng.next() % 70_000))
                    guard case .accept(let offset, let events) = op.bodyReceived(
                        launch.attempt, ByteBuffer(bytes: body[at..<at + size]), maxBodyBytes: 1 << 30, now: UInt64(at), throttle: D.noThrottle)
                    else {
                        Issue.record("a chunk was refused")
                        return run
                    }
                    #expect(offset == op.receivedBytes - Int64(size), "the chunk's place in the body")
                    note(events)
                    at += size
                }
            case .refuse, .stale:
                break
            }
            let error: (any Error)? = attempt < cuts.count ? DownloadFailure.network(.reset, "cut") : nil
            switch op.attemptEnded(launch.attempt, error: error, retryPolicy: retries, jitter: 0, now: 0) {
            case .retry:
                launch = op.retryTimerFired()!
            case .deliver(let delivery):
                note(delivery.progress)
                run.delivered = delivery.body
                return run
            case .fail(_, _, let failure, _):
                run.failure = failure
                return run
            case .stale:
                Issue.record("the current attempt's end was stale")
                return run
            }
        }
        return run
    }

    /// Cut at random points, each attempt resumes exactly where the body stopped, and the body
    /// delivered is byte for byte the server's; progress never goes backwards; one response.
    @Test(arguments: Array(1...24))
    func randomCutsResumeToTheSameBytes(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        let body = (0..<(200_000 + Int(rng.next() % 400_000))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        // Each cut falls inside what is left (a cut after the last byte would be answered 416).
        var cuts: [Int] = []
        var left = body.count
        for _ in 0..<(1 + Int(rng.next() % 5)) where left > 2 {
            cuts.append(1 + Int(rng.next() % UInt64(min(150_000, left - 2))))
            left -= cuts.last!
        }
        let run = fetch(body, cuts: cuts, server: .resumes, rng: &rng)
        #expect(run.failure == nil)
        #expect(run.delivered == ByteBuffer(bytes: body), "byte-identical")
        var received = 0
        for (index, resume) in run.resumes.enumerated() {
            if index == 0 {
                #expect(resume == nil)
                continue
            }
            received += cuts[index - 1]
            #expect(resume == ResumePoint(offset: Int64(received), validator: validator, total: Int64(body.count)), "attempt \(index + 1)")
        }
        #expect(run.progress == run.progress.sorted(), "progress never goes backwards")
        #expect(run.progress.last == Int64(body.count))
        #expect(run.responses == 1)
        #expect(run.discarded == 0, "nothing fetched twice")
    }

    /// A server that answers every resume with the whole body: each attempt starts over (the body
    /// so far is dropped, and a streaming decode told), and what is delivered is still whole.
    @Test(arguments: Array(1...6))
    func aServerThatIgnoresRangesIsReadFromTheStart(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        let body = (0..<300_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let run = fetch(body, cuts: [100_000, 50_000], server: .ignoresRanges, rng: &rng)
        #expect(run.delivered == ByteBuffer(bytes: body))
        #expect(run.discarded == 2)
        #expect(run.progress == run.progress.sorted())
        #expect(run.responses == 1)
    }

    /// A `206` from the wrong offset is refused and drops the validator: the next attempt asks for
    /// the whole body, and gets it.
    @Test func aWrongContentRangeMakesTheNextAttemptStartOver() {
        var rng = SplitMix(seed: 9)
        let body = (0..<120_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let run = fetch(body, cuts: [40_000, 0], server: .wrongRange, rng: &rng)
        #expect(run.delivered == ByteBuffer(bytes: body))
        #expect(run.resumes.count == 3)
        #expect(run.resumes[1]?.offset == 40_000)
        #expect(run.resumes[2] == nil, "after a refused resume, the whole body")
        #expect(run.discarded == 1, "the third attempt's whole body replaced the first 40,000 bytes")
    }

    /// A body longer than its head declared mixes two answers: never resumed from. A whole
    /// body's overrun fails the fetch (its response was reported); a resumed one's makes the
    /// next attempt start over.
    @Test func anOverrunIsNeverResumedFrom() {
        let overrun = DownloadFailure.network(.truncated, "the body went past its declared 10 bytes")
        var op = FetchOperation(token: token, priority: .normal)
        _ = op.start()
        _ = D.respond(&op, D.head(10, validator: validator))
        #expect(D.receive(&op, D.bytes(12)) == .refuse(offset: 0, overrun))
        #expect(D.end(&op, overrun) == .fail(cause: overrun, tokens: [token], failure: overrun, blocksURL: false))

        var resumed = FetchOperation(token: token, priority: .normal)
        _ = resumed.start()
        _ = D.respond(&resumed, D.head(20, validator: validator))
        _ = D.receive(&resumed, D.bytes(8))
        _ = D.end(&resumed, DownloadFailure.network(.reset, "cut"))
        #expect(resumed.retryTimerFired()?.resume?.offset == 8)
        let rest = FetchOperation.Head(info: D.info(12, status: 206), contentRange: "bytes 8-19/20")
        #expect(D.respond(&resumed, rest) == .accept(events: [], discardsBody: false))
        #expect(D.receive(&resumed, D.bytes(14, from: 8)) == .refuse(offset: 8, .network(.truncated, "the body went past its declared 20 bytes")))
        guard case .retry = D.end(&resumed, DownloadFailure.network(.truncated, "past")) else {
            Issue.record("a resumed attempt's overrun was not retried whole")
            return
        }
        #expect(resumed.retryTimerFired() == .init(attempt: 3, resume: nil, discardsBody: true))
    }

    /// Retries run out across resumes like any others: the failure carries every attempt's.
    @Test func resumesCountAgainstTheRetries() {
        var rng = SplitMix(seed: 3)
        let body = (0..<100_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let run = fetch(body, cuts: Array(repeating: 1_000, count: 12), server: .resumes, rng: &rng)
        #expect(run.delivered == nil)
        guard case .afterAttempts(_, let attempts, _) = run.failure else {
            Issue.record("no failure after attempts: \(String(describing: run.failure))")
            return
        }
        #expect(attempts == 9, "one attempt and eight retries")
    }
}
