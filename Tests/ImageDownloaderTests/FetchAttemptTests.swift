@testable import ImageDownloader
import InputValidation
import Testing

/// `FetchAttempt` without I/O: each event's decision, from a clock the test sets.
@Suite struct FetchAttemptTests {
    private let ms: UInt64 = 1_000_000

    private func receiving(expected: Int64? = nil, at now: UInt64 = 0) -> FetchAttempt {
        var attempt = FetchAttempt(number: 1)
        attempt.began(now: now)
        let r1 = attempt.headReceived(status: 200, contentLength: expected, retryAfterSeconds: nil, maxBodyBytes: 1_000, now: now)
        #expect(r1 == .success(.whole))
        return attempt
    }

    /// What a response allows resuming with: `Accept-Ranges: bytes` among its values (any case,
    /// spaces and tabs around), then a strong ETag as sent, or a Last-Modified a minute before Date.
    @Test func theResumeValidatorOfAResponse() {
        func v(_ headers: [(String, String)]) -> String? { ResumePoint.validator(headers: headers) }
        #expect(v([("Accept-Ranges", "bytes"), ("ETag", "\"a\"")]) == "\"a\"")
        #expect(v([("accept-ranges", "none,\t Bytes "), ("etag", " \t\"a b\" ")]) == "\"a b\"")
        #expect(v([("Accept-Ranges", "none"), ("ETag", "\"a\"")]) == nil)
        #expect(v([("Accept-Ranges", "bytesx"), ("ETag", "\"a\"")]) == nil)
        #expect(v([("Accept-Ranges", "bytes"), ("ETag", "W/\"a\"")]) == nil, "weak")
        #expect(v([("Accept-Ranges", "bytes"), ("ETag", "  ")]) == nil)
        let date = ("Date", "Wed, 26 Nov 2026 10:00:00 GMT")
        #expect(v([("Accept-Ranges", "bytes"), ("Last-Modified", "Wed, 26 Nov 2026 09:58:00 GMT"), date]) == "Wed, 26 Nov 2026 09:58:00 GMT")
        #expect(v([("Accept-Ranges", "bytes"), ("Last-Modified", "Wed, 26 Nov 2026 09:59:30 GMT"), date]) == nil, "too recent")
        #expect(ResumePoint.trimmingOWS(" \t x y\t ") == "x y" && ResumePoint.trimmingOWS(" \t") == "" && ResumePoint.trimmingOWS("") == "")
    }

    @Test func aWholeBodySucceeds() {
        var attempt = receiving(expected: 10)
        let r2 = attempt.bodyReceived(total: 4, maxBodyBytes: 1_000, now: 1)
        #expect(r2 == nil)
        let r3 = attempt.bodyReceived(total: 10, maxBodyBytes: 1_000, now: 2)
        #expect(r3 == nil)
        #expect(attempt.state == .receiving(lastActivity: 2, received: 10, expected: 10))
        let r4 = attempt.loaderEnded(error: nil)
        #expect(r4 == .succeeded(received: 10))
        #expect(attempt.state == .ended && !attempt.isTransferring)
    }

    @Test func headsThatAreNotSuccessFailWithTheirReason() {
        for (status, expected) in [(304, DownloadFailure.notModified), (404, .statusCode(404, retryAfterSeconds: nil)),
                                   (503, .statusCode(503, retryAfterSeconds: 2))] {
            var attempt = FetchAttempt(number: 1)
            attempt.began(now: 0)
            let retryAfter: Double? = status == 503 ? 2 : nil
            let r5 = attempt.headReceived(status: status, contentLength: nil, retryAfterSeconds: retryAfter, maxBodyBytes: 10, now: 0)
            #expect(r5 == .failure(expected))
            #expect(attempt.state == .awaitingHead(lastActivity: 0), "a refused head does not start the body")
        }
        var attempt = FetchAttempt(number: 1)
        attempt.began(now: 0)
        let r6 = attempt.headReceived(status: 200, contentLength: 11, retryAfterSeconds: nil, maxBodyBytes: 10, now: 0)
        #expect(r6 == .failure(.limitExceeded(.bodyBytes, limit: 10, actual: 11)))
    }

    @Test func aBodyPastTheLimitFails() {
        var attempt = receiving()
        let r7 = attempt.bodyReceived(total: 1_001, maxBodyBytes: 1_000, now: 1)
        #expect(r7 == .limitExceeded(.bodyBytes, limit: 1_000, actual: nil))
    }

    @Test func shortAndEmptyBodiesFail() {
        var short = receiving(expected: 10)
        _ = short.bodyReceived(total: 6, maxBodyBytes: 1_000, now: 1)
        let r8 = short.loaderEnded(error: nil)
        #expect(r8 == .failed(.network(.truncated, "body ended after 6 of 10 bytes")))
        var empty = receiving()
        let r9 = empty.loaderEnded(error: nil)
        #expect(r9 == .failed(.badData("Image data is nil: the response body is empty")))
        var headless = FetchAttempt(number: 1)
        headless.began(now: 0)
        let r10 = headless.loaderEnded(error: nil)
        #expect(r10 == .failed(.network(.io, "the transfer ended before its response head")))
    }

    @Test func loaderErrorsAreClassified() {
        struct Refused: Error {}
        var a = receiving()
        let r11 = a.loaderEnded(error: DownloadFailure.statusCode(500, retryAfterSeconds: nil))
        #expect(r11 == .failed(.statusCode(500, retryAfterSeconds: nil)))
        var b = receiving()
        let r12 = b.loaderEnded(error: CancellationError())
        #expect(r12 == .failed(.network(.io, "the transfer was cancelled")))
        var c = receiving()
        let r13 = c.loaderEnded(error: Refused())
        #expect(r13 == .failed(.network(.connection, "Refused()")))
    }

    /// The watchdog sleeps until the last activity plus the timeout, moves with every byte, and
    /// stops the transfer once the timeout passes; whatever the loader throws then, the attempt
    /// failed by timeout, with the timeout that applied.
    @Test func theIdleWatchdogTimesOutOnlyAfterSilence() {
        var attempt = FetchAttempt(number: 2)
        let r14 = attempt.watchdogWoke(now: 0, timeoutMs: 100)
        #expect(r14 == .stop, "not begun: nothing to watch")
        attempt.began(now: 10 * ms)
        let r15 = attempt.watchdogWoke(now: 50 * ms, timeoutMs: 100)
        #expect(r15 == .checkAt(110 * ms))
        let r16 = attempt.headReceived(status: 200, contentLength: nil, retryAfterSeconds: nil, maxBodyBytes: 1_000, now: 60 * ms)
        #expect(r16 == .success(.whole))
        let r17 = attempt.watchdogWoke(now: 110 * ms, timeoutMs: 100)
        #expect(r17 == .checkAt(160 * ms))
        _ = attempt.bodyReceived(total: 5, maxBodyBytes: 1_000, now: 150 * ms)
        let r18 = attempt.watchdogWoke(now: 160 * ms, timeoutMs: 100)
        #expect(r18 == .checkAt(250 * ms))
        let r19 = attempt.watchdogWoke(now: 200 * ms, timeoutMs: 40)
        #expect(r19 == .stopTransfer, "a shorter timeout applies at once")
        #expect(attempt.state == .timedOut(ms: 40) && !attempt.isTransferring)
        let r20 = attempt.bodyReceived(total: 9, maxBodyBytes: 1_000, now: 201 * ms)
        #expect(r20 == nil)
        let r21 = attempt.loaderEnded(error: CancellationError())
        #expect(r21 == .failed(.network(.timeout, "no data for 40 ms")))
        let r22 = attempt.watchdogWoke(now: 300 * ms, timeoutMs: 40)
        #expect(r22 == .stop)
    }

    @Test func eventsAfterTheEndAreIgnored() {
        var attempt = receiving()
        _ = attempt.bodyReceived(total: 3, maxBodyBytes: 1_000, now: 1)
        let r23 = attempt.loaderEnded(error: nil)
        #expect(r23 == .succeeded(received: 3))
        let r24 = attempt.bodyReceived(total: 5_000, maxBodyBytes: 1_000, now: 2)
        #expect(r24 == nil)
        let r25 = attempt.headReceived(status: 500, contentLength: nil, retryAfterSeconds: nil, maxBodyBytes: 1_000, now: 2)
        #expect(r25 == nil)
        #expect(attempt.state == .ended)
    }

    // MARK: Resuming

    @Test func aResumedAttemptContinuesFromItsOffsetOnAMatching206() {
        var attempt = FetchAttempt(number: 2, resume: ResumePoint(offset: 400, validator: "\"v1\"", total: 1000))
        attempt.began(now: 0)
        let head = attempt.headReceived(
            status: 206, contentLength: 600, contentRange: "bytes 400-999/1000", retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
        #expect(head == .success(.continuing))
        #expect(attempt.state == .receiving(lastActivity: 1, received: 400, expected: 1000))
        _ = attempt.bodyReceived(total: 999, maxBodyBytes: 10_000, now: 2)
        #expect(attempt.loaderEnded(error: nil) == .failed(.network(.truncated, "body ended after 999 of 1000 bytes")))
    }

    @Test func aResumedAttemptTakesA200AsTheWholeBodyAgain() {
        var attempt = FetchAttempt(number: 2, resume: ResumePoint(offset: 400, validator: "\"v1\"", total: 1000))
        attempt.began(now: 0)
        let head = attempt.headReceived(status: 200, contentLength: 1200, retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
        #expect(head == .success(.whole))
        #expect(attempt.state == .receiving(lastActivity: 1, received: 0, expected: 1200))
    }

    @Test func aRangeThatDoesNotFitFailsSoTheNextAttemptStartsOver() {
        for (status, range) in [
            (206, "bytes 300-999/1000"), (206, "bytes 400-999/2000"), (206, "nonsense"), (416, "bytes */1000"),
            (206, "bytes 400-899/1000"),  // not the rest: the worker asked for bytes=400-
        ] {
            var attempt = FetchAttempt(number: 2, resume: ResumePoint(offset: 400, validator: "x", total: 1000))
            attempt.began(now: 0)
            let head = attempt.headReceived(status: status, contentLength: nil, contentRange: range, retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
            guard case .failure(let failure)? = head else {
                Issue.record("\(status) \(range) accepted")
                continue
            }
            #expect(failure.isTransient, "\(status) \(range)")
        }
        #expect(ContentRange.parse("bytes 0-9/*") == ContentRange(first: 0, last: 9, total: nil))
        #expect(ContentRange.parse(" Bytes 3-9/10 ") == ContentRange(first: 3, last: 9, total: 10))
        #expect(ContentRange.parse("bytes 5-4/10") == nil)
        #expect(ContentRange.parse("bytes 0-10/10") == nil)
        #expect(ContentRange.parse("bytes +1-9/10") == nil, "digits only: no sign")
        #expect(ContentRange.parse("bytes 1-9/99999999999999999999") == nil, "a total past Int64")
    }

    /// A `206` answers a `Range`: the worker's resume or the caller's own header. To a request
    /// that asked for no part, a part is not the resource (seen: the first 1,000 bytes of a JPEG
    /// saved and reported as success).
    @Test func a206ToARequestWithoutARangeFails() {
        var plain = FetchAttempt(number: 1)
        plain.began(now: 0)
        let head = plain.headReceived(
            status: 206, contentLength: 1000, contentRange: "bytes 0-999/5000", retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
        guard case .failure(let failure)? = head else {
            Issue.record("a 206 without a Range was accepted")
            return
        }
        #expect(failure.description.contains("206"))
        var asked = FetchAttempt(number: 1, callerRange: true)
        asked.began(now: 0)
        #expect(
            asked.headReceived(status: 206, contentLength: 1000, contentRange: "bytes 0-999/5000", retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
                == .success(.whole), "the caller's own Range: its answer")
    }

    /// A resumed body is exactly what the heads declared: a 206 whose length is not its range's
    /// fails at its head, and bytes past the declared total fail the attempt and forbid resuming
    /// from what was received (it mixes two answers).
    @Test func aResumedBodyIsNeverLongerThanDeclared() {
        var wrongLength = FetchAttempt(number: 2, resume: ResumePoint(offset: 400, validator: "v", total: 1000))
        wrongLength.began(now: 0)
        guard case .failure? = wrongLength.headReceived(
            status: 206, contentLength: 700, contentRange: "bytes 400-999/1000", retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
        else {
            Issue.record("a 206 of 700 bytes for a 600-byte range was accepted")
            return
        }
        var extra = FetchAttempt(number: 2, resume: ResumePoint(offset: 400, validator: "v", total: 1000))
        extra.began(now: 0)
        #expect(
            extra.headReceived(status: 206, contentLength: nil, contentRange: "bytes 400-999/1000", retryAfterSeconds: nil, maxBodyBytes: 10_000, now: 1)
                == .success(.continuing))
        #expect(extra.bodyReceived(total: 1000, maxBodyBytes: 10_000, now: 2) == nil)
        #expect(!extra.overran)
        #expect(extra.bodyReceived(total: 1024, maxBodyBytes: 10_000, now: 3) != nil)
        #expect(extra.overran, "what came is not resumable")
        var whole = receiving(expected: 10)
        #expect(whole.bodyReceived(total: 11, maxBodyBytes: 1_000, now: 1) != nil, "a whole body past its Content-Length too")
    }
}
