/// How a download uses the HTTP cache (when the worker has one: `--cache-dir`), as URLSession's
/// request cache policies.
public enum CachePolicy: String, Sendable, CaseIterable {
    /// RFC 9111: a fresh stored response is served with no request; a stale one is revalidated
    /// (`If-None-Match`/`If-Modified-Since`; a 304 refreshes and serves it); what may be stored is.
    case `default`
    /// Ignore stored responses: always load (the response is still stored).
    case reload
    /// Any stored response, fresh or stale, without asking the server; else load.
    case preferCache
    /// A stored response or a failure (`NetworkError`, reason `notCached`): never the network.
    case cacheOnly
}

/// Where a response came from.
public enum CacheUse: String, Sendable {
    /// The network.
    case none
    /// The cache, without a request.
    case stored
    /// The cache, after the server answered 304 to a conditional request.
    case revalidated
}
