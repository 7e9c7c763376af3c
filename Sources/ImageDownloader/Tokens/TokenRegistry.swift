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
    /// so that a record takes 64 bytes rather than 96: there is one per queued
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

    /// Each live token's slot in `slots`. The records sit in an array rather than in the table
    /// itself: a table slot is then 28 bytes, not 88, and a hash table is often under half full
    /// (it doubles at three quarters), with one entry per queued download.
    private var slotByToken: [DownloadToken: Int32] = [:]
    private var slots: [Record?] = []
    /// Slots free for the next tokens.
    private var freeSlots: [Int32] = []
    private(set) var succeeded = 0
    private(set) var failed = 0
    private(set) var cancelled = 0

    var isEmpty: Bool { slotByToken.isEmpty }
    var count: Int { slotByToken.count }
    var tokens: Dictionary<DownloadToken, Int32>.Keys { slotByToken.keys }
    /// Every live token with its record.
    var records: some Sequence<(token: DownloadToken, record: Record)> {
        slotByToken.lazy.map { (token: $0.key, record: slots[Int($0.value)]!) }  // a live token's slot holds its record
    }

    subscript(token: DownloadToken) -> Record? {
        guard let slot = slotByToken[token] else { return nil }
        return slots[Int(slot)]
    }

    /// Changes a live token's record in place; nothing for a token that is not live.
    private mutating func update(_ token: DownloadToken, _ change: (inout Record) -> Void) {
        guard let slot = slotByToken[token] else { return }
        change(&slots[Int(slot)]!)  // a live token's slot holds its record
    }

    /// Takes a token; false if it is live.
    mutating func reserve(_ token: DownloadToken, url: String, priority: DownloadPriority) -> Bool {
        guard slotByToken[token] == nil else { return false }
        let record = Record(place: .reserved(cancelled: false), url: url, priority: priority)
        if let slot = freeSlots.popLast() {
            slots[Int(slot)] = record
            slotByToken[token] = slot
        } else {
            slotByToken[token] = Int32(slots.count)
            slots.append(record)
        }
        return true
    }

    /// Marks a reserved token cancelled (its start ends it). False if it is not reserved.
    mutating func cancelReserved(_ token: DownloadToken) -> Bool {
        guard case .reserved = self[token]?.place else { return false }
        update(token) { $0.place = .reserved(cancelled: true) }
        return true
    }

    mutating func attach(_ token: DownloadToken, to fetch: FetchID, processor: @escaping Processor, now: UInt64) {
        update(token) { record in
            record.place = .attached(fetch)
            record.processor = processor
            record.enqueuedAt = now
        }
    }

    mutating func setQuiet(_ token: DownloadToken) {
        update(token) { $0.quiet = true }
    }

    mutating func markStarted(_ token: DownloadToken, now: UInt64) {
        update(token) { record in
            if record.startedAt == nil { record.startedAt = now }
        }
    }

    mutating func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) {
        update(token) { $0.priority = priority }
    }

    /// Removes a token as it ends and counts how; false if it had already ended (every token
    /// ends once).
    mutating func finish(_ token: DownloadToken, _ outcome: DownloadOutcome<Delivered, Failure>) -> Bool {
        guard let slot = slotByToken.removeValue(forKey: token) else { return false }
        if slotByToken.isEmpty {
            // Nothing live: the tables give their memory back (a burst of queued downloads
            // leaves nothing behind).
            slotByToken = [:]
            slots = []
            freeSlots = []
        } else {
            slots[Int(slot)] = nil
            freeSlots.append(slot)
        }
        switch outcome {
        case .success: succeeded += 1
        case .failure, .processingFailed: failed += 1
        case .cancelled: cancelled += 1
        }
        return true
    }

    /// The reserved tokens (not yet in any fetch).
    var reserved: [DownloadToken] {
        records.compactMap { entry in
            if case .reserved = entry.record.place { return entry.token }
            return nil
        }
    }
}
