import Foundation

/// When and how long to wait before another attempt. Exponential backoff with "equal jitter":
/// the n-th retry waits between half and all of `base * 2^(n-1)`, capped by `maxDelayMs`.
/// A server's `Retry-After` is honoured when longer, up to the same cap.
public struct RetryPolicy: Sendable, Equatable {
    public var maxRetries: Int
    public var baseDelayMs: Int64
    public var maxDelayMs: Int64

    /// - Parameters:
    ///   - retry: 1 for the first retry (the second attempt), 2 for the next…
    ///   - jitter: a random number in 0..<1.
    public func delayMs(retry: Int, retryAfterSeconds: Double?, jitter: Double) -> Int64 {
        let exponent = min(max(retry - 1, 0), 30)
        let ceiling = min(Double(baseDelayMs) * pow(2, Double(exponent)), Double(maxDelayMs))
        var delay = ceiling / 2 + ceiling / 2 * min(max(jitter, 0), 1)
        if let retryAfterSeconds, retryAfterSeconds > 0 {
            delay = max(delay, min(retryAfterSeconds * 1000, Double(maxDelayMs)))
        }
        return Int64(delay.rounded())
    }

    /// Parses a `Retry-After` value: delay-seconds or an HTTP-date.
    public static func parseRetryAfter(_ value: String, now: Date = Date()) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds >= 0 { return seconds }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}

extension RetryPolicy {
    /// The worker's policy. (In an extension, so that the memberwise initializer stays.)
    public init(_ configuration: DownloaderConfiguration) {
        self.init(
            maxRetries: configuration.maxRetries, baseDelayMs: configuration.retryBaseDelayMs,
            maxDelayMs: configuration.retryMaxDelayMs)
    }
}
