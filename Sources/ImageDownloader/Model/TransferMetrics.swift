/// Where one token's download spent its time, as URLSession's task metrics: every terminal event
/// carries them. A phase that did not happen is nil (no connection was made for a request that
/// reused one; nothing was transferred for a response served from the cache).
public struct TransferMetrics: Sendable, Equatable {
    /// From the token's start (its `download` request) to its fetch starting (or to its end, for a
    /// token that never left the queue).
    public var queuedMs: Double?
    /// The last attempt waited for new connections (one per redirect hop at most): from asking
    /// for each to its being ready, added up (DNS, TCP, TLS and a proxy's tunnel together:
    /// AsyncHTTPClient does not report them apart).
    public var connectMs: Double?
    /// Every hop of the last attempt went out on a connection that was ready before it was asked for.
    public var reusedConnection: Bool?
    /// From the last attempt's start to its response head (redirects included).
    public var ttfbMs: Double?
    /// From the response head to the body's end (or the failure).
    public var transferMs: Double?
    /// Body bytes read from the network, every attempt together (0 from the cache).
    public var wireBytes: Int64 = 0
    public var httpVersion: String?
    /// The peer of the last attempt's connection (`ip:port`; a proxy's, through one).
    public var remoteAddress: String?
    /// Attempts made (0 when the token ended before any).
    public var attempts = 0
    /// Attempts that resumed a body part-way (`Range`).
    public var resumed = 0
    /// Redirects followed by the last attempt.
    public var redirects = 0
    public var fromCache = false
    public var revalidated = false

    public init() {}
}

/// A loaded response's connection, as the loader saw it.
public struct ConnectionInfo: Sendable, Equatable {
    public var remoteAddress: String?
    public var connectMs: Double?
    public var reused: Bool

    public init(remoteAddress: String?, connectMs: Double?, reused: Bool) {
        self.remoteAddress = remoteAddress
        self.connectMs = connectMs
        self.reused = reused
    }
}
