import NIOCore

/// What a token goes through, in order: started, response, progress…, then exactly one completed.
/// `url` is the token's URL as its request gave it (user information removed), whatever fetch it
/// shares and wherever redirects took it.
public enum DownloadEvent<Delivered: Sendable, Failure: Error & Sendable>: Sendable {
    case started(DownloadToken, url: String)
    case response(DownloadToken, url: String, ResponseInfo)
    case progress(DownloadToken, received: Int64, expected: Int64?)
    case completed(DownloadToken, url: String, DownloadOutcome<Delivered, Failure>, metrics: TransferMetrics)

    public var token: DownloadToken {
        switch self {
        case .started(let t, _), .response(let t, _, _), .progress(let t, _, _), .completed(let t, _, _, _): return t
        }
    }
}

public struct ResponseInfo: Sendable, Equatable {
    public var status: Int
    public var expectedBytes: Int64?
    /// From Content-Type, without its parameters.
    public var mimeType: String?
    /// The URL the body came from, after redirects, as fetched (percent-encoded, no fragment).
    public var finalURL: String
    /// "1.1" or "2".
    public var httpVersion: String?
    /// Whether the HTTP cache answered, and how.
    public var cache: CacheUse

    public init(status: Int, expectedBytes: Int64?, mimeType: String?, finalURL: String, httpVersion: String?, cache: CacheUse = .none) {
        self.status = status
        self.expectedBytes = expectedBytes
        self.mimeType = mimeType
        self.finalURL = finalURL
        self.httpVersion = httpVersion
        self.cache = cache
    }
}

/// How a token ended: its processor's result, its fetch's failure, its processor's failure, or
/// cancelled.
public enum DownloadOutcome<Delivered: Sendable, Failure: Error & Sendable>: Sendable {
    case success(Delivered)
    case failure(DownloadFailure)
    case processingFailed(Failure)
    case cancelled
}

/// What a token's processor is told besides the resource: which token it works for, the token's
/// priority as its processing starts (the delivery stage serves higher priorities first) and its
/// URL as shown (without user information). One processor may then serve many tokens.
public struct ProcessingTicket: Sendable {
    public var token: DownloadToken
    public var priority: DownloadPriority
    public var url: String

    public init(token: DownloadToken, priority: DownloadPriority, url: String) {
        (self.token, self.priority, self.url) = (token, priority, url)
    }
}

/// A fetched body, handed to each token's processor.
public struct FetchedResource: Sendable {
    public var response: ResponseInfo
    public var body: ByteBuffer
    /// Identifies the fetch: tokens that shared it get resources with the same id.
    public var fetchID: Int
    /// How many tokens' processors receive this resource (each is called exactly once), so work
    /// shared among them (one decode) knows when the last one is done.
    public var consumers: Int
    /// The body also went to the fetch's follower as it arrived (a token asked for it,
    /// `DownloadRequest.streamsBody`); false: nothing watched it.
    public var streamed = false
    /// What followed the fetch (`FetchFollower`), the same for every token of the fetch: what
    /// their processors share (a decoder fed while bytes arrived, one decode) lives there.
    public var follower: (any FetchFollower)?

    public var byteCount: Int { body.readableBytes }
}
