import Foundation
import InputValidation

/// Where a resumed attempt continues: the bytes already received, the validator that must still
/// hold (`If-Range`), and the body's whole length when known.
public struct ResumePoint: Sendable, Equatable {
    public var offset: Int64
    public var validator: String
    public var total: Int64?

    public init(offset: Int64, validator: String, total: Int64?) {
        self.offset = offset
        self.validator = validator
        self.total = total
    }

    /// The `If-Range` value a response allows resuming with: it says `Accept-Ranges: bytes` and
    /// has a strong validator, a strong `ETag` (not `W/`) or a `Last-Modified` at least a minute
    /// before its `Date` (RFC 9110 §8.8.2.2); nil otherwise.
    public static func validator(headers: [(String, String)]) -> String? {
        func header(_ name: String) -> String? { headers.first { LoadedHead.sameName($0.0, name) }?.1 }
        guard let ranges = header("Accept-Ranges"), ranges.split(separator: ",").contains(where: { LoadedHead.sameName(String(trimmingOWS($0)), "bytes") })
        else { return nil }
        if let etag = header("ETag").map({ String(trimmingOWS($0[...])) }), etag.hasPrefix("\""), etag.count >= 2 { return etag }
        if let modified = header("Last-Modified"), let lastModified = HTTPDate.parse(modified), let date = header("Date").flatMap({ HTTPDate.parse($0) }),
            date.timeIntervalSince(lastModified) >= 60
        {
            return modified
        }
        return nil
    }

    /// A header value without the spaces and tabs around it (RFC 9110's OWS), in Swift: Foundation's
    /// `trimmingCharacters(in:)` bridges through NSString for every header.
    static func trimmingOWS(_ value: Substring) -> Substring {
        func isOWS(_ c: Character) -> Bool { c == " " || c == "\t" }
        guard let first = value.firstIndex(where: { !isOWS($0) }), let last = value.lastIndex(where: { !isOWS($0) }) else { return "" }
        return value[first...last]
    }
}

/// One attempt of a fetch (connect, head, body, end) as a value state machine: what the downloader
/// knows of an attempt (the attempt number, when bytes last arrived, whether the idle watchdog
/// stopped it, how much came) lives here, and each event returns what to
/// do. The downloader performs the I/O (the loader's task, the watchdog's sleep, the body's bytes);
/// `FetchOperation` decides what an attempt's end means for the fetch (retry, fail, deliver).
struct FetchAttempt: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// Launched; the loader's task has not run yet (the idle clock has not started).
        case launched
        /// Waiting for the response head; `lastActivity` is when the attempt began.
        case awaitingHead(lastActivity: UInt64)
        /// The head was accepted; bytes arrive.
        case receiving(lastActivity: UInt64, received: Int64, expected: Int64?)
        /// The idle watchdog stopped the transfer after `ms` without data: whatever the loader
        /// throws on its way out, the attempt failed by timeout.
        case timedOut(ms: Int64)
        /// Ended (succeeded or failed); later events are ignored.
        case ended
    }

    /// What the watchdog does next.
    enum WatchdogAction: Sendable, Equatable {
        /// Nothing arrived for the timeout: stop the transfer (the attempt is now `timedOut`).
        case stopTransfer
        /// Sleep until this clock reading, then look again.
        case checkAt(UInt64)
        /// The attempt is no longer waiting for bytes.
        case stop
    }

    /// How the attempt ended.
    enum Outcome: Sendable, Equatable {
        case succeeded(received: Int64)
        case failed(DownloadFailure)
    }

    let number: Int
    /// Where a resumed attempt continues the body (`Range: bytes=offset-`), and the body's whole
    /// length if known; nil: the attempt fetches the whole body.
    let resume: ResumePoint?
    /// The request carries a `Range` of the caller's own: a `206` is its answer.
    let callerRange: Bool
    private(set) var state: State = .launched
    /// The body went past its declared length: what was received is not one resource's bytes,
    /// so the next attempt must start over (never resume from it).
    private(set) var overran = false

    init(number: Int, resume: ResumePoint? = nil, callerRange: Bool = false) {
        self.number = number
        self.resume = resume
        self.callerRange = callerRange
    }

    /// Whether the transfer is still the attempt's (head or bytes may come).
    var isTransferring: Bool {
        switch state {
        case .launched, .awaitingHead, .receiving: return true
        case .timedOut, .ended: return false
        }
    }

    /// The loader's task runs: the idle clock starts now, not when the attempt was asked for (a
    /// task that waited for a thread has not been waiting for the server).
    mutating func began(now: UInt64) {
        guard case .launched = state else { return }
        state = .awaitingHead(lastActivity: now)
    }

    /// How a head was taken.
    enum Head: Sendable, Equatable {
        /// The whole body follows.
        case whole
        /// A resumed attempt's `206`: the rest of the body follows, from `resume.offset`.
        case continuing
    }

    /// The response head: a 2xx is accepted (with its declared length), anything else fails the
    /// attempt with the failure that says why. A resumed attempt accepts a `206` whose
    /// `Content-Range` starts where the body stopped (and names the same whole length), and a
    /// `200` (the whole body again: the caller starts over); a `416` or a range that does not fit
    /// fails it transiently, so that the next attempt starts over. A `206` that answers no
    /// `Range` (neither the worker's nor the caller's) is not the resource: it fails. The body
    /// may never be longer than the head declared (`bodyReceived`). A whole 2xx response the
    /// site opts out of (`optedOut`) fails with it.
    mutating func headReceived(
        status: Int, contentLength: Int64?, contentRange: String? = nil, retryAfterSeconds: Double?, maxBodyBytes: Int64,
        optedOut: DownloadFailure? = nil, now: UInt64
    ) -> Result<Head, DownloadFailure>? {
        guard case .awaitingHead = state else { return nil }
        if let resume, status == 206 || status == 416 {
            let total: Int64?
            switch ContentRange.continuation(
                status: status, contentRange: contentRange, contentLength: contentLength, offset: resume.offset, total: resume.total)
            {
            case .success(let whole): total = whole
            case .failure(let refusal): return .failure(.network(.truncated, refusal.reason))
            }
            if let total, total > maxBodyBytes { return .failure(.limitExceeded(.bodyBytes, limit: maxBodyBytes, actual: total)) }
            state = .receiving(lastActivity: now, received: resume.offset, expected: total)
            return .success(.continuing)
        }
        switch status {
        case 206 where !callerRange:
            // Nothing asked for part of the resource: a part is not the resource.
            return .failure(.network(.truncated, "206 Partial Content to a request without a Range (\(contentRange ?? "no Content-Range"))"))
        case 200..<300:
            break
        case 304:
            return .failure(.notModified)
        default:
            return .failure(.statusCode(status, retryAfterSeconds: retryAfterSeconds))
        }
        if let optedOut { return .failure(optedOut) }
        if let contentLength, contentLength > maxBodyBytes {
            return .failure(.limitExceeded(.bodyBytes, limit: maxBodyBytes, actual: contentLength))
        }
        state = .receiving(lastActivity: now, received: 0, expected: contentLength)
        return .success(.whole)
    }

    /// Bytes arrived; `total` is the body's size so far. Past the limit, the attempt fails.
    mutating func bodyReceived(total: Int64, maxBodyBytes: Int64, now: UInt64) -> DownloadFailure? {
        guard case .receiving(_, _, let expected) = state else { return nil }
        state = .receiving(lastActivity: now, received: total, expected: expected)
        if total > maxBodyBytes { return .limitExceeded(.bodyBytes, limit: maxBodyBytes, actual: nil) }
        // Never more than declared: a resumed body is exactly what Content-Range and the first
        // response said, never the end of one answer with extra bytes of another.
        if let expected, total > expected {
            overran = true
            return .network(.truncated, "the body went past its declared \(expected) bytes")
        }
        return nil
    }

    /// The watchdog wakes: it stops the transfer once nothing has arrived for `timeoutMs` (read
    /// each time, so a new configuration applies at once).
    mutating func watchdogWoke(now: UInt64, timeoutMs: Int64) -> WatchdogAction {
        let timeoutMs = max(1, timeoutMs)
        let lastActivity: UInt64
        switch state {
        case .launched: return .stop
        case .awaitingHead(let last): lastActivity = last
        case .receiving(let last, _, _): lastActivity = last
        case .timedOut, .ended: return .stop
        }
        let deadline = lastActivity &+ UInt64(timeoutMs) * 1_000_000
        if now >= deadline {
            state = .timedOut(ms: timeoutMs)
            return .stopTransfer
        }
        return .checkAt(deadline)
    }

    /// The loader returned (`error` nil) or threw. A timed-out attempt fails by timeout whatever
    /// was thrown; a body shorter than its declared length, or empty, fails.
    mutating func loaderEnded(error: (any Error)?) -> Outcome {
        let previous = state
        state = .ended
        switch previous {
        case .ended:
            return .failed(.network(.io, "the attempt had already ended"))
        case .timedOut(let ms):
            return .failed(.network(.timeout, DownloadFailure.idleTimeoutPrefix + "\(ms) ms"))
        case .launched, .awaitingHead, .receiving:
            break
        }
        if let error {
            if let failure = error as? DownloadFailure { return .failed(failure) }
            if error is CancellationError { return .failed(.network(.io, "the transfer was cancelled")) }
            return .failed(.network(.connection, String(describing: error)))
        }
        guard case .receiving(_, let received, let expected) = previous else {
            return .failed(.network(.io, "the transfer ended before its response head"))
        }
        if let expected, received < expected {
            return .failed(.network(.truncated, "body ended after \(received) of \(expected) bytes"))
        }
        if received == 0 { return .failed(.badData("Image data is nil: the response body is empty")) }
        return .succeeded(received: received)
    }
}
