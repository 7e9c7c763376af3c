/// SDWebImage's manager `failedURLs`, with an expiry: a URL that failed for a reason that will
/// not go away by itself (`DownloadFailure.blocksURL`) is refused at once until it expires,
/// unless a request sets `retryFailed`.
public struct FailedURLList: Sendable {
    public struct Entry: Sendable, Equatable {
        public var reason: String
        public var until: UInt64
    }

    private var entries: [String: Entry] = [:]

    public init() {}

    public mutating func record(_ url: String, reason: String, now: UInt64, expiryNanos: UInt64) {
        entries[url] = Entry(reason: reason, until: now &+ expiryNanos)
        if entries.count > 10_000 { purge(now: now) }
    }

    public mutating func remove(_ url: String) {
        entries[url] = nil
    }

    /// The entry blocking `url` now, if any (an expired one is dropped).
    public mutating func blocking(_ url: String, now: UInt64) -> Entry? {
        guard let entry = entries[url] else { return nil }
        if now >= entry.until {
            entries[url] = nil
            return nil
        }
        return entry
    }

    public mutating func removeAll() { entries.removeAll() }

    public var count: Int { entries.count }

    private mutating func purge(now: UInt64) {
        entries = entries.filter { $0.value.until > now }
    }
}
