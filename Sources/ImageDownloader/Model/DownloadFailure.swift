/// Why a fetch failed: the URL, the HTTP exchange, the transport, the body. Each case maps to one
/// application error of the wire protocol (the mapping lives in the worker, beside that of its
/// own delivery failures; names follow SDWebImage's errors). Nothing here is about decoding or
/// writing: a token's processor fails with its own error type (`Downloader`'s `Failure`).
public enum DownloadFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is missing, unparsable, or of a scheme the worker does not fetch.
    case invalidURL(String)
    /// The request was refused before it was sent (a `file://` URL outside the allowed root, …).
    case invalidOperation(String)
    /// The server answered with a status outside 2xx.
    case statusCode(Int, retryAfterSeconds: Double?)
    /// 304 and there is no cached copy to fall back on.
    case notModified
    /// The transport failed; see `NetworkReason`.
    case network(NetworkReason, String)
    /// A configured limit was exceeded.
    case limitExceeded(LimitKind, limit: Int64, actual: Int64?)
    /// The URL failed earlier for a reason that will not go away, and `retryFailed` was not set.
    case blocked(since: String)
    /// The bytes arrived but cannot be an image (an empty body).
    case badData(String)
    /// The response's `X-Robots-Tag` says a directive the worker is told to respect
    /// (`RobotsTagPolicy`): the body is not read.
    case optedOut(directives: [String], header: String)
    /// The download ended with the first failure after `attempts` attempts (a deadline may end
    /// it between two); `earlier` says why each attempt before that end ended, in order.
    indirect case afterAttempts(DownloadFailure, attempts: Int, earlier: [DownloadFailure])

    public enum NetworkReason: String, Sendable {
        /// `timeout`: no data for the idle timeout; `deadline`: no result within the download's
        /// own wall-clock limit, over every attempt; `hostDown`: not tried, its host is down
        /// (`HostHealth`).
        case timeout, deadline, dns, tls, connection, reset, truncated, redirect, protocolError = "protocol", io, proxy, notCached, hostDown
    }

    public enum LimitKind: String, Sendable {
        case bodyBytes
    }

    public var description: String {
        switch self {
        case .invalidURL(let m): return "Invalid URL: \(m)"
        case .invalidOperation(let m): return m
        case .statusCode(let code, _):
            return "Download marked as failed because of invalid response status code \(code)"
        case .notModified: return "Downloaded image is not modified and ignored (HTTP 304 with no cached copy)"
        case .network(let reason, let detail): return "Network error (\(reason.rawValue)): \(detail)"
        case .limitExceeded(let kind, let limit, let actual):
            switch kind {
            case .bodyBytes:
                return "Response body " + (actual.map { "of \($0) bytes " } ?? "") + "exceeds the limit of \(limit) bytes"
            }
        case .blocked(let since):
            return "URL is on the failed-URL list (\(since)); set retryFailed to try it again"
        case .badData(let m): return m
        case .optedOut(let directives, let header):
            return "The site opts out: X-Robots-Tag \"\(header)\" says \(directives.joined(separator: ", ")) (disallowedHeaderDirectives)"
        case .afterAttempts(let last, let attempts, let earlier):
            let count = "after \(attempts) attempt\(attempts == 1 ? "" : "s")"
            if earlier.isEmpty { return "\(last.description) (\(count))" }
            let said = last.description
            // Every attempt alike (a name that does not resolve, a refused connection): said once.
            if earlier.allSatisfy({ $0.description == said }) { return "\(said) (\(count), each the same)" }
            // Runs of the same failure as one entry: `1-2: …; 3: …`.
            var runs: [(first: Int, last: Int, text: String)] = []
            for (i, failure) in earlier.enumerated() {
                let text = failure.description
                if let previous = runs.last, previous.text == text { runs[runs.count - 1].last = i + 1 } else { runs.append((i + 1, i + 1, text)) }
            }
            return "\(said) (\(count); earlier: "
                + runs.map { "\($0.first == $0.last ? "\($0.first)" : "\($0.first)-\($0.last)"): \($0.text)" }.joined(separator: "; ") + ")"
        }
    }

    /// The failure itself, without the earlier attempts'.
    public var last: DownloadFailure {
        if case .afterAttempts(let last, _, _) = self { return last }
        return self
    }

    /// Failures worth another attempt: the same request may well succeed a moment later.
    /// 4xx statuses other than 429 never are.
    public var isTransient: Bool {
        switch self {
        case .afterAttempts(let last, _, _):
            return last.isTransient
        case .network(let reason, _):
            switch reason {
            case .timeout, .dns, .connection, .reset, .truncated, .io: return true
            // (`hostDown`: a retry within the host's down time would end the same way.)
            case .tls, .redirect, .protocolError, .deadline, .proxy, .notCached, .hostDown: return false
            }
        case .statusCode(let code, _):
            return code >= 500 || code == 429
        default:
            return false
        }
    }

    /// Failures of a fetch that put its URL on the failed-URL list, as SDWebImage's manager does
    /// for failures that are not network conditions: a 4xx status, a redirect loop, an empty body.
    /// (Not a TLS failure: the same URL may well succeed with `allowInvalidCertificates`. Not a
    /// token's decode or write failure: those are not the fetch's, see
    /// `FetchOperation.tokenProcessed`.)
    public var blocksURL: Bool {
        switch self {
        case .afterAttempts(let last, _, _): return last.blocksURL
        case .statusCode(let code, _): return code >= 400 && code < 500 && code != 429
        case .network(.redirect, _): return true
        case .badData: return true
        default: return false
        }
    }
}
