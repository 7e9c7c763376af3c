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
    public var runningFetches: Int
    public var queuedTokens: Int
    public var runningTokens: Int
    public var succeeded: Int
    public var failed: Int
    public var cancelled: Int
    public var blockedURLs: Int
    public var liveTokens: [LiveToken]
    public var configuration: DownloaderConfiguration
}
