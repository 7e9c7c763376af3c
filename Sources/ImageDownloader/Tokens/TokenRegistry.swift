/// The live tokens: each one's URL (as shown), priority, processor and where it is (reserved, or
/// attached to a fetch), and the counts of how tokens ended. A value type the downloader owns;
/// a token is in it from `reserve` until its one `completed` event.
struct TokenRegistry<Delivered: Sendable, Failure: Error & Sendable, FetchID: Hashable & Sendable> {
    /// The fetched resource, and the token, its priority when its processing starts and its URL.
    typealias Processor = @Sendable (FetchedResource, ProcessingTicket) async throws(Failure) -> Delivered

    enum Place: Equatable {
        /// Taken by `reserve`, not yet started (`cancelled`: cancel came first; start ends it).
        case reserved(cancelled: Bool)
        case attached(FetchID)
    }

    /// The fields are in this order, and the clock readings kept without an optional's tag,
    /// so that a record takes 64 bytes of the table rather than 96: there is one per queued
    /// download.
    struct Record {
        /// The URL as shown in events, status and logs (without user information).
        let url: String
        var processor: Processor?
        private var enqueuedReading = Record.none
        private var startedReading = Record.none
        var place: Place
        var priority: DownloadPriority
        /// Only the terminal event is emitted (`DownloadRequest.quiet`).
        var quiet = false

        private static var none: UInt64 { .max }

        init(place: Place, url: String, priority: DownloadPriority) {
            (self.place, self.url, self.priority) = (place, url, priority)
        }

        /// When the token was started (joined the queue or a fetch), and when its fetch started
        /// for it (its `started` event): clock readings.
        var enqueuedAt: UInt64? {
            get { enqueuedReading == Record.none ? nil : enqueuedReading }
            set { enqueuedReading = newValue ?? Record.none }
        }
        var startedAt: UInt64? {
            get { startedReading == Record.none ? nil : startedReading }
            set { startedReading = newValue ?? Record.none }
        }
    }

    private(set) var records: [DownloadToken: Record] = [:]
    private(set) var succeeded = 0
    private(set) var failed = 0
    private(set) var cancelled = 0

    var isEmpty: Bool { records.isEmpty }
    var count: Int { records.count }
    var tokens: Dictionary<DownloadToken, Record>.Keys { records.keys }

    subscript(token: DownloadToken) -> Record? { records[token] }

    /// Takes a token; false if it is live.
    mutating func reserve(_ token: DownloadToken, url: String, priority: DownloadPriority) -> Bool {
        guard records[token] == nil else { return false }
        records[token] = Record(place: .reserved(cancelled: false), url: url, priority: priority)
        return true
    }

    /// Marks a reserved token cancelled (its start ends it). False if it is not reserved.
    mutating func cancelReserved(_ token: DownloadToken) -> Bool {
        guard case .reserved = records[token]?.place else { return false }
        records[token]?.place = .reserved(cancelled: true)
        return true
    }

    mutating func attach(_ token: DownloadToken, to fetch: FetchID, processor: @escaping Processor, now: UInt64) {
        records[token]?.place = .attached(fetch)
        records[token]?.processor = processor
        records[token]?.enqueuedAt = now
    }

    mutating func setQuiet(_ token: DownloadToken) {
        records[token]?.quiet = true
    }

    mutating func markStarted(_ token: DownloadToken, now: UInt64) {
        if records[token]?.startedAt == nil { records[token]?.startedAt = now }
    }

    mutating func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) {
        records[token]?.priority = priority
    }

    /// Removes a token as it ends and counts how; false if it had already ended (every token
    /// ends once).
    mutating func finish(_ token: DownloadToken, _ outcome: DownloadOutcome<Delivered, Failure>) -> Bool {
        guard records.removeValue(forKey: token) != nil else { return false }
        switch outcome {
        case .success: succeeded += 1
        case .failure, .processingFailed: failed += 1
        case .cancelled: cancelled += 1
        }
        return true
    }

    /// The reserved tokens (not yet in any fetch).
    var reserved: [DownloadToken] {
        records.compactMap { token, record in
            if case .reserved = record.place { return token }
            return nil
        }
    }
}
