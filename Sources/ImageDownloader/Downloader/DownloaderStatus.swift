/// What `Downloader.status()` reports: queue and token counts, every live token, the configuration.
public struct DownloaderStatus: Sendable {
    public struct LiveToken: Sendable {
        /// Where a live token is (the wire's `state`: the raw values).
        public enum State: String, Sendable, CaseIterable {
            /// Taken, not yet started.
            case reserved
            /// Its fetch waits in the queue.
            case queued
            /// Its fetch is transferring.
            case running
            /// Its fetch failed an attempt and waits to try again.
            case waitingToRetry
            /// Its fetch has the body; the token's result is being made (decoded, written).
            case delivering

            init(_ fetch: FetchOperation.State) {
                switch fetch {
                case .queued: self = .queued
                case .running: self = .running
                case .waitingToRetry: self = .waitingToRetry
                case .delivering, .finished: self = .delivering
                }
            }

            /// Not yet transferring (counted as queued).
            public var isWaiting: Bool { self == .reserved || self == .queued }
        }

        public var token: DownloadToken
        public var url: String
        public var priority: DownloadPriority
        public var state: State
        public var receivedBytes: Int64
        public var expectedBytes: Int64?
    }

    public var queuedFetches: Int
    /// Fetches transferring or waiting to retry (in their queue slots, or, with nothing kept to
    /// resume from, having lent their running slots out until the delay ends).
    public var runningFetches: Int
    /// Fetches whose bodies are in and whose tokens are being decoded or written (no slot held).
    public var deliveringFetches: Int
    public var queuedTokens: Int
    /// Tokens whose fetch is transferring or waiting to retry.
    public var runningTokens: Int
    /// Tokens being decoded or written (in the delivery stage).
    public var deliveringTokens: Int
    public var succeeded: Int
    public var failed: Int
    public var cancelled: Int
    public var blockedURLs: Int
    /// Hosts down now (`HostHealth`), by their queue key.
    public var hostsDown: [String]
    public var liveTokens: [LiveToken]
    public var configuration: DownloaderConfiguration
    public var totals: Totals

    /// Fetches that ended since start, summed: what went over the network and how.
    public struct Totals: Sendable, Equatable {
        public var fetches = 0
        public var attempts = 0
        public var resumed = 0
        public var redirects = 0
        public var wireBytes: Int64 = 0
        /// Fetches served from the HTTP cache (with no request, or after a 304).
        public var fromCache = 0
        public var revalidated = 0
        /// Fetches whose last attempt waited for a new connection, or reused one.
        public var newConnections = 0
        public var reusedConnections = 0
        /// Fetches whose response came over HTTP/2.
        public var http2 = 0

        public init() {}

        mutating func add(_ m: FetchMetrics) {
            fetches += 1
            attempts += m.attempts
            resumed += m.resumed
            wireBytes += m.wireBytes
            guard let head = m.head else { return }
            redirects += head.redirects
            if head.cache != .none { fromCache += 1 }
            if head.cache == .revalidated { revalidated += 1 }
            if let connection = head.connection { if connection.reused { reusedConnections += 1 } else { newConnections += 1 } }
            if head.version == "2" && head.cache != .stored { http2 += 1 }
        }
    }
}
