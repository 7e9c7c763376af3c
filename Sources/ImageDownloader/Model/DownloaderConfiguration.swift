/// Everything `configure` can change at run time. Defaults are SDWebImage's where it has one.
public struct DownloaderConfiguration: Sendable, Equatable {
    /// At most this many fetches run at once (SDWebImage: 6).
    public var maxConcurrentDownloads = 6
    /// At most this many of them for one host (scheme, host and port) at once.
    public var maxConcurrentPerHost = 6
    /// Fetches started per second for one host at most (evenly spaced); nil: no limit.
    public var maxRequestsPerSecondPerHost: Double? = nil
    public var executionOrder = ExecutionOrder.fifo
    /// While suspended, queued fetches wait; running ones go on.
    public var suspended = false
    /// Idle timeout of a fetch, in milliseconds: connecting, waiting for the response head, and
    /// the longest gap between two body chunks (SDWebImage: 15 s, like NSURLRequest's).
    public var timeoutMs: Int64 = 15_000
    /// Headers sent with every request; a request's own headers override them by name.
    public var headers: [String: String] = [:]
    /// A progress event is sent only when at least this fraction of the expected size arrived since
    /// the last one (0...1; SDWebImage's `minimumProgressInterval`). The first and last are always sent.
    public var minimumProgressInterval: Double = 0
    /// …and at least this many milliseconds passed since the last one.
    public var progressIntervalMs: Int64 = 100
    /// Retries after a transient failure (connect error, timeout, reset, 5xx, 429).
    public var maxRetries = 2
    /// First retry delay; doubles each time, with full jitter, capped by `retryMaxDelayMs`.
    public var retryBaseDelayMs: Int64 = 250
    public var retryMaxDelayMs: Int64 = 10_000
    /// Responses larger than this fail with LimitExceeded (256 MiB).
    public var maxBodyBytes: Int64 = 256 << 20
    /// Redirects followed before a fetch fails.
    public var maxRedirects = 10
    /// How long a URL stays on the failed-URL list.
    public var failedURLExpiryMs: Int64 = 600_000
    /// Connection failures in a row (never reaching a connection: refused, unreachable, connect
    /// timeout) after which a host is down (`HostHealth`): its downloads wait while it is probed,
    /// and fail once it is still down after `hostDownMs`. 0: never.
    public var hostDownAfter = 3
    public var hostDownMs: Int64 = 30_000
    /// Proxies for http and https URLs and the hosts that bypass them (by default from the
    /// environment: `WorkerOptions` reads it).
    public var proxies = ProxySettings()
    /// The HTTP cache's size on disk (`--cache-dir`), evicting least recently used entries past it.
    public var cacheMaxBytes: Int64 = 1 << 30
    /// Fetches whose bodies are in but whose tokens' processing (decode, write) is not over: at
    /// this many, no new fetch starts (running ones go on). A fetch gives its queue slot back
    /// once its body is in, so this bounds the bodies held for the delivery stage; the worker
    /// sets it from its decode concurrency.
    public var maxDeliveringFetches = 12
    /// From this many delivering fetches on (below `maxDeliveringFetches`), no new fetch starts
    /// either while their bodies hold `maxDeliveringBytes` or more: many small bodies may wait,
    /// fewer large ones.
    public var minDeliveringFetches = 12
    /// The bytes of bodies that hold new fetches back from `minDeliveringFetches` on.
    public var maxDeliveringBytes: Int64 = 16 << 20

    /// The delivery stage's limits as the queue holds them.
    var deliveryLimits: DeliveryStageLimits {
        .init(maxFetches: maxDeliveringFetches, minFetches: minDeliveringFetches, maxBytes: maxDeliveringBytes)
    }
    /// The User-Agent sent unless a request sets its own.
    public var userAgent: String
    /// A token that names this job to the sites it fetches from (img2dataset's
    /// `user_agent_token`): added to the User-Agent (`sentUserAgent`), and a name `X-Robots-Tag`
    /// directives may be addressed to.
    public var userAgentToken: String?
    /// `X-Robots-Tag` directives that refuse a fetch before its body (`OptedOut`); empty: none.
    public var disallowedHeaderDirectives: [String] = []

    public init(userAgent: String = "image-worker") {
        self.userAgent = userAgent
    }
}

extension DownloaderConfiguration {
    /// The User-Agent as sent: `userAgent`, with the token when there is one.
    public var sentUserAgent: String { userAgentToken.map { "\(userAgent) (compatible; \($0))" } ?? userAgent }

    /// What refuses a fetch from its response's `X-Robots-Tag`: the directives, for every
    /// crawler or addressed to the User-Agent's product or the token (none: an empty policy).
    var robotsTagPolicy: RobotsTagPolicy {
        guard !disallowedHeaderDirectives.isEmpty else { return RobotsTagPolicy() }
        return RobotsTagPolicy(
            disallowed: disallowedHeaderDirectives, agents: [RobotsTagPolicy.product(of: userAgent)] + (userAgentToken.map { [$0] } ?? []))
    }
}

extension DownloaderConfiguration {
    /// The rule `HostHealth` applies, from `hostDownAfter` and `hostDownMs`.
    var hostHealthSettings: HostHealth<Int>.Settings {
        HostHealth.Settings(failuresInARow: max(0, hostDownAfter), downNs: UInt64(max(0, hostDownMs)) * 1_000_000)
    }

    /// The spacing of two fetch starts for one host, from `maxRequestsPerSecondPerHost`.
    var minStartIntervalPerHostNs: UInt64 {
        guard let rate = maxRequestsPerSecondPerHost, rate > 0 else { return 0 }
        return UInt64(min(1e9 / rate, 3.6e12))
    }
}
