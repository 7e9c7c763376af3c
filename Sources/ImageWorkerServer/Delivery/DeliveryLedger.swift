import ImageDownloader

/// Everything the delivery stage keeps per fetch and per progressive token, as a value: each
/// event changes it and says what to do, and `FetchDeliveries` does it under one lock. Tested
/// without I/O (`DeliveryLedgerTests`): `Stream` and `Decode` stand for the progressive decoder
/// and a shared decode's task, which the ledger only holds.
///
/// - Each progressive token's **target**: its spec and URL, how many partial images it was sent
///   and when the last, and the path its partial images went to (the final image replaces the
///   last of them there). Dropped with the token's terminal event, under the same lock, so no
///   partial image can follow it.
/// - Each fetch's **delivery**: its progressive decoder (when a token streams the body), its
///   shared decodes (one per decode request, for every token that coalesced on the fetch), and
///   how many of its consumers (the tokens whose processors got the body) have still to finish.
///   The decodes go once every consumer is done with them; the last one to finish releases the rest.
struct DeliveryLedger<Stream: Sendable, Decode: Sendable>: Sendable {
    struct Target: Sendable {
        var spec: OutputSpec
        /// The URL the token asked for, which names its file in a `dir`.
        var url: String
        /// Tells a token apart from a later one with the same name.
        var instance: UInt64
        var sequence = 0
        var lastPartialAt: UInt64 = 0
        var reservedPath: String?
    }

    /// What makes two tokens' decodes of one fetch the same.
    struct DecodeKey: Hashable, Sendable {
        var format: OutputSpec.Format
        /// The final image's size terms (`OutputGeometry.final`).
        var geometry: OutputGeometry
    }

    struct Fetch: Sendable {
        var stream: Stream?
        var decodes: [DecodeKey: Decode] = [:]
        /// Consumers still to finish; nil until the first finishes (it says how many there are).
        var remaining: Int?
        /// Consumers that need the decodes no more: their decode's hook has run, or they finished.
        var doneDecoding: Set<DownloadToken> = []
    }

    private(set) var targets: [DownloadToken: Target] = [:]
    private(set) var fetches: [Int: Fetch] = [:]
    private var lastInstance: UInt64 = 0
    /// Progressive decoders and shared decodes started since start.
    private(set) var decodesStarted = 0

    // MARK: Tokens

    /// A progressive download was accepted for `token`.
    mutating func register(_ token: DownloadToken, spec: OutputSpec, url: String) {
        lastInstance += 1
        targets[token] = Target(spec: spec, url: url, instance: lastInstance)
    }

    /// The token's terminal event is being sent: no partial image after it. False: it had no target.
    @discardableResult
    mutating func tokenEnded(_ token: DownloadToken) -> Bool {
        targets.removeValue(forKey: token) != nil
    }

    /// The progressive tokens among `tokens` whose next partial image is due at `now` (their
    /// first, or `partialIntervalMs` after their last).
    func due(_ tokens: [DownloadToken], now: UInt64) -> [(DownloadToken, Target)] {
        tokens.compactMap { token -> (DownloadToken, Target)? in
            guard let target = targets[token] else { return nil }
            let interval = UInt64(max(0, target.spec.partialIntervalMs)) * 1_000_000
            return target.sequence == 0 || now &- target.lastPartialAt >= interval ? (token, target) : nil
        }
    }

    /// A partial image for `target` (as `due` gave it) is ready, written to `path` if a file:
    /// true, and counted, when the token is still the one it was made for (then its event is
    /// sent, under the same lock).
    mutating func partialReady(_ token: DownloadToken, of target: Target, path: String?, now: UInt64) -> Bool {
        guard var current = targets[token], current.instance == target.instance else { return false }
        current.sequence += 1
        current.lastPartialAt = now
        current.reservedPath = path
        targets[token] = current
        return true
    }

    // MARK: A fetch's progressive decoder

    enum ChunkAction {
        case feed(Stream)
        /// No decoder yet: make one (`streamStarted`), then feed it.
        case start
    }

    /// Bytes of the fetch's body arrived for its streaming tokens.
    func chunk(_ fetchID: Int) -> ChunkAction {
        fetches[fetchID]?.stream.map { .feed($0) } ?? .start
    }

    mutating func streamStarted(_ fetchID: Int, _ stream: Stream) {
        fetches[fetchID, default: Fetch()].stream = stream
        decodesStarted += 1
    }

    func stream(of fetchID: Int) -> Stream? { fetches[fetchID]?.stream }

    /// The body starts over, or the fetch ended without one: its decoder is taken out (to be
    /// abandoned); a new one starts with the next bytes.
    mutating func streamAborted(_ fetchID: Int) -> Stream? {
        guard let stream = fetches[fetchID]?.stream else { return nil }
        fetches[fetchID]?.stream = nil
        if let fetch = fetches[fetchID], fetch.decodes.isEmpty, fetch.remaining == nil { fetches[fetchID] = nil }
        return stream
    }

    // MARK: The fetch's deliveries

    enum DecodeAction {
        /// Another token of the fetch started this decode: await it.
        case join(Decode)
        /// The first: start it (`decodeStarted`).
        case start
    }

    func decode(_ fetchID: Int, _ key: DecodeKey) -> DecodeAction {
        fetches[fetchID]?.decodes[key].map { .join($0) } ?? .start
    }

    mutating func decodeStarted(_ fetchID: Int, _ key: DecodeKey, _ decode: Decode) {
        fetches[fetchID, default: Fetch()].decodes[key] = decode
        decodesStarted += 1
    }

    enum DeliveredAction {
        case none
        /// The last consumer finished: the fetch's decodes are dropped, and its progressive
        /// decoder (if any) gives its memory back.
        case release(Stream?)
    }

    /// `token`, a consumer of the fetch (one of `consumers`), needs the fetch's decodes no more:
    /// its decode's hook has run (it holds what it needs). Once every consumer is done with them,
    /// the decodes are dropped, so that a decoded image lives as long as someone holds it, not
    /// until the last consumer's event.
    mutating func doneDecoding(_ fetchID: Int, _ token: DownloadToken, consumers: Int) {
        guard var fetch = fetches[fetchID] else { return }
        fetch.doneDecoding.insert(token)
        if fetch.doneDecoding.count >= max(1, consumers) { fetch.decodes = [:] }
        fetches[fetchID] = fetch
    }

    /// A consumer of the fetch (one of `consumers`) finished its delivery, whatever the outcome.
    mutating func delivered(_ fetchID: Int, _ token: DownloadToken, consumers: Int) -> DeliveredAction {
        var fetch = fetches[fetchID] ?? Fetch()
        let remaining = (fetch.remaining ?? max(1, consumers)) - 1
        guard remaining <= 0 else {
            fetch.remaining = remaining
            fetches[fetchID] = fetch
            doneDecoding(fetchID, token, consumers: consumers)
            return .none
        }
        fetches[fetchID] = nil
        return .release(fetch.stream)
    }
}
