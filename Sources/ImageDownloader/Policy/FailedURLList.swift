/// SDWebImage's manager `failedURLs`, with an expiry and a bound: a URL that failed for a reason
/// that will not go away by itself (`DownloadFailure.blocksURL`) is refused at once until it
/// expires, unless a request sets `retryFailed`. At most `capacity` URLs are kept, the oldest
/// recorded dropped first: a bulk job of millions of dead URLs holds as much as one of
/// `capacity`, and each record costs the same however many came before.
public struct FailedURLList: Sendable {
    public struct Entry: Sendable, Equatable {
        public var reason: String
        public var until: UInt64
    }

    public let capacity: Int
    private var entries: [String: Entry] = [:]
    /// The URLs in the order they were recorded, from `head`, with when each record expires: one
    /// whose entry was since removed or recorded again is passed over.
    private var order: [(url: String, until: UInt64)] = []
    private var head = 0

    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    public mutating func record(_ url: String, reason: String, now: UInt64, expiryNanos: UInt64) {
        let until = now &+ expiryNanos
        entries[url] = Entry(reason: reason, until: until)
        order.append((url, until))
        while entries.count > capacity, head < order.count {
            let oldest = order[head]
            head += 1
            if entries[oldest.url]?.until == oldest.until { entries[oldest.url] = nil }
        }
        // The records passed over, dropped once they are most of the queue.
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        if order.count - head > 2 * capacity + 1024 {
            order = order[head...].filter { entries[$0.url]?.until == $0.until }
            head = 0
        }
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

    public mutating func removeAll() {
        entries.removeAll()
        order.removeAll()
        head = 0
    }

    public var count: Int { entries.count }
}
