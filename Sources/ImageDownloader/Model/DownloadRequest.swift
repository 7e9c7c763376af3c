import Foundation

/// What one token asks for.
public struct DownloadRequest: Sendable {
    public var token: DownloadToken
    public var url: String
    public var priority: DownloadPriority
    /// Request headers, added to (and overriding) the configured defaults.
    public var headers: [(String, String)]
    /// Overrides the configured idle timeout.
    public var timeoutMs: Int64?
    public var credentials: Credentials?
    public var allowInvalidCertificates: Bool
    public var handleCookies: Bool
    /// Ignore the failed-URL list for this request.
    public var retryFailed: Bool
    /// A wall-clock limit from the token's start (its `started` event, queue time excluded) to its
    /// body, over every attempt and retry wait; nil: none.
    public var deadlineMs: Int64?
    /// Retries after a transient failure, and the first retry's delay, for this token; nil: the
    /// configured ones.
    public var maxRetries: Int?
    public var retryDelayMs: Int64?
    /// Stream this fetch's body to the downloader's chunk observer as it arrives (progressive
    /// decoding). Not part of what makes requests share a fetch.
    public var streamsBody = false
    /// How the HTTP cache answers (when the worker has one).
    public var cachePolicy = CachePolicy.default
    /// Only the token's terminal event: no `started`, `response` or `progress` (a bulk job that
    /// shows no progress needs none of them, and each costs an encode, a write and a parse).
    public var quiet = false

    public init(
        token: DownloadToken, url: String, priority: DownloadPriority = .normal, headers: [(String, String)] = [],
        timeoutMs: Int64? = nil, credentials: Credentials? = nil, allowInvalidCertificates: Bool = false,
        handleCookies: Bool = false, retryFailed: Bool = false
    ) {
        self.token = token
        self.url = url
        self.priority = priority
        self.headers = headers
        self.timeoutMs = timeoutMs
        self.credentials = credentials
        self.allowInvalidCertificates = allowInvalidCertificates
        self.handleCookies = handleCookies
        self.retryFailed = retryFailed
    }
}

/// Basic-auth credentials. Their description never shows the password.
public struct Credentials: Sendable, Hashable, CustomStringConvertible {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    public var authorizationHeader: String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    public var description: String { "Credentials(user: \(user), password: <redacted>)" }
}
