import Foundation
import InputValidation
import Logging
import NIOCore

/// The downloader: one operation queue, fetches shared by every token asking for the same
/// resource, cancel and priority by token. It performs what `DownloadQueue`, `FetchOperation` and
/// `FetchAttempt` decide (value state machines, tested without I/O) and reports every token's
/// events, in order, to `sink` (called on the actor, so events of one token never race each
/// other). Every token gets exactly one `completed` event.
///
/// A token's life: `reserve` (the token is taken, nothing is emitted yet), then `start` (it joins
/// or creates a fetch, or ends at once: invalid URL, blocked URL, cancelled while reserved).
/// The split lets the worker write the `download` response before any event of that token.
///
/// This file holds the requests; `Downloader+Fetch.swift` what a fetch holds and
/// `Downloader+FetchesByKey.swift` the table requests join fetches by; `Downloader+Actions.swift`
/// performs the fetch machine's actions (events, queue, processing, failed URLs);
/// `Downloader+Attempts.swift` runs each attempt's transfer and retry timer, and
/// `Downloader+Watchdog.swift` watches the attempts' idle deadlines.
public actor Downloader<Delivered: Sendable, Failure: Error & Sendable> {
    /// Turns a fetched body into what a token asked for; its `Failure` (the caller's type: the
    /// downloader knows nothing of decoding or writing) fails that token alone. It is told which
    /// token it works for (`ProcessingTicket`), so that one closure may serve every token that
    /// asked for the same output: a queued download then holds a pointer to it rather than a
    /// closure of its own.
    public typealias Processor = @Sendable (FetchedResource, ProcessingTicket) async throws(Failure) -> Delivered
    public typealias EventSink = @Sendable (DownloadEvent<Delivered, Failure>) -> Void
    /// Makes the follower of fetch `id` (`FetchFollower`), when its first attempt launches.
    public typealias FollowerMaker = @Sendable (_ id: Int) -> any FetchFollower
    public typealias Status = DownloaderStatus

    public struct TokenInUse: Error, Sendable {
        public let token: DownloadToken
    }

    typealias FetchID = Int

    /// (set by `configure` and `resumeToDrain`, in Downloader+Control.swift)
    public internal(set) var configuration: DownloaderConfiguration {
        didSet {
            defaultHeaders = nil  // made again from the new configuration when next needed
            robotsPolicy = configuration.robotsTagPolicy
        }
    }
    /// What refuses a response from its `X-Robots-Tag`: made once a configuration, not per
    /// response (empty, and nothing read, while no directive is disallowed).
    private(set) var robotsPolicy: RobotsTagPolicy
    /// The default headers merged, and in their key form: shared by every request without
    /// headers of its own, not copied per queued download.
    private var defaultHeaders: (merged: [(String, String)], keyForm: [String])?
    let httpLoader: any ResourceLoader
    let fileLoader: FileLoader
    let sink: EventSink
    let followers: FollowerMaker?
    /// Gets what a processor delivered for a token that had ended meanwhile (cancelled, past its
    /// deadline): the caller's to undo (a shared-memory file nobody will be told of).
    let discarded: (@Sendable (Delivered) -> Void)?
    let logger: Logger
    let clock: @Sendable () -> UInt64

    var queue: DownloadQueue<FetchID>
    var fetches: [FetchID: Fetch] = [:]
    var fetchByKey = FetchesByKey()
    var tokens = TokenRegistry<Delivered, Failure, FetchID>()
    var failedURLs = FailedURLList()
    /// Hosts whose connections keep failing, and those down (`hostDownAfter`).
    var hostHealth = HostHealth<FetchID>()
    var totals = Status.Totals()
    private var nextFetchID = 0
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    var held = false
    /// Tokens with a deadline: its length, and its timer once the token has started.
    var deadlines: [DownloadToken: (ms: Int64, timer: Task<Void, Never>?)] = [:]
    /// The timer that wakes the queue when a host's spacing ends (`maxRequestsPerSecondPerHost`).
    var queueWake: (at: UInt64, task: Task<Void, Never>)?
    /// The running attempts' idle deadlines and when each lends its slot without a head
    /// (`AttemptDeadlines`), and the one timer for the earliest (Downloader+Watchdog).
    var attemptDeadlines = AttemptDeadlines<FetchID>()
    /// When anything last moved (`quietForNs`): a head, body bytes, an attempt's start or end.
    var lastActivity: UInt64 = 0
    var watchdog: (at: UInt64, task: Task<Void, Never>)?
    /// The processing task of each token being processed, cancelled when the token ends first.
    var processing: [DownloadToken: Task<Void, Never>] = [:]

    public init(
        configuration: DownloaderConfiguration,
        httpLoader: any ResourceLoader,
        fileURLPolicy: FileURLPolicy,
        logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        followers: FollowerMaker? = nil,
        discarded: (@Sendable (Delivered) -> Void)? = nil,
        sink: @escaping EventSink
    ) {
        self.followers = followers
        self.discarded = discarded
        self.configuration = configuration
        robotsPolicy = configuration.robotsTagPolicy
        self.httpLoader = httpLoader
        self.fileLoader = FileLoader(policy: fileURLPolicy)
        self.logger = logger
        self.clock = clock
        self.sink = sink
        self.queue = DownloadQueue(
            maxConcurrent: configuration.maxConcurrentDownloads, maxConcurrentPerHost: configuration.maxConcurrentPerHost,
            minStartIntervalPerHostNs: configuration.minStartIntervalPerHostNs, order: configuration.executionOrder,
            suspended: configuration.suspended)
        queue.deliveryLimits = configuration.deliveryLimits
    }

    // MARK: Requests

    /// Takes `token` for a download that `start` will begin. Fails if the token is live.
    public func reserve(_ token: DownloadToken, url: String, priority: DownloadPriority) throws(TokenInUse) {
        // The URL as shown (events, status, logs): without user information.
        guard tokens.reserve(token, url: DownloadURL.redacted(url), priority: priority) else { throw TokenInUse(token: token) }
    }

    /// Begins the download of a reserved token. `processor` turns the fetched body into what the
    /// token asked for; its failure fails that token alone.
    public func start(_ request: DownloadRequest, processor: @escaping Processor) {
        let token = request.token
        guard let record = tokens[token], case .reserved(let wasCancelled) = record.place else {
            logger.error("start of a token that was not reserved", metadata: ["token": "\(token)"])
            return
        }
        if request.quiet { tokens.setQuiet(token) }
        if wasCancelled {
            finishToken(token, .cancelled)
            return
        }
        let url: URL
        let credentials: Credentials?
        do throws(DownloadFailure) {
            let parsed = try DownloadURL.checked(request.url, fileURLsEnabled: fileLoader.policy.root != nil)
            url = parsed.url
            credentials = request.credentials ?? parsed.userInfo.map { Credentials(user: $0.user, password: $0.password) }
            if url.isFileURL { _ = try fileLoader.policy.resolve(url) }
            // A fetch keeps the URL as text and parses it again for each attempt: it must.
            guard URL(string: url.absoluteString) != nil else { throw .invalidURL("cannot parse \"\(record.url)\"") }
        } catch {
            finishToken(token, .failure(error))
            return
        }
        if !request.retryFailed, let entry = failedURLs.blocking(record.url, now: clock()) {
            finishToken(token, .failure(.blocked(since: entry.reason)))
            return
        }
        let headers: [(String, String)]
        let keyHeaders: [String]
        if request.headers.isEmpty {
            // The usual case: every such request shares one copy of the defaults and their key form.
            let shared = defaultHeaders ?? {
                let merged = effectiveHeaders([])
                return (merged, FetchKey.keyForm(merged))
            }()
            defaultHeaders = shared
            (headers, keyHeaders) = shared
        } else {
            headers = effectiveHeaders(request.headers)
            keyHeaders = FetchKey.keyForm(headers)
        }
        let key = FetchKey(
            url: url, keyHeaders: keyHeaders, credentials: credentials,
            allowInvalidCertificates: request.allowInvalidCertificates, handleCookies: request.handleCookies,
            cachePolicy: request.cachePolicy)
        let limits = FetchOperation.TokenLimits(maxRetries: request.maxRetries, retryDelayMs: request.retryDelayMs)
        if let ms = request.deadlineMs { deadlines[token] = (ms, nil) }
        if let fetch = fetchByKey[key], fetch.machine.acceptsTokens {
            join(token, fetch: fetch.id, priority: record.priority, limits: limits, streamsBody: request.streamsBody, processor: processor)
            return
        }
        let id = nextFetchID
        nextFetchID += 1
        let fetch = Fetch(
            id: id,
            machine: FetchOperation(
                token: token, priority: record.priority, limits: limits,
                callerRange: headers.contains { $0.0.caseInsensitiveCompare("Range") == .orderedSame }, streamsBody: request.streamsBody),
            key: key, url: url, headers: headers, timeoutMs: request.timeoutMs)
        fetches[id] = fetch
        fetchByKey.insert(fetch)
        tokens.attach(token, to: id, processor: processor, now: clock())
        var host = Downloader.hostKey(url)
        // A host that is down holds its fetches in the queue; one the HTTP cache answers needs no
        // network, and waits in a lane of its own instead.
        if !fetch.isFile, queue.isHeld(host), httpLoader.answersWithoutNetwork(fetch.request) { host = "stored " + host }
        startFetches(queue.enqueue(id, priority: record.priority, host: host, now: clock()))
    }

    /// Ends a reserved token without a fetch, with what its processor would have delivered (a
    /// file kept from an earlier run): its one `completed` event, no `started` (cancelled if it
    /// was cancelled meanwhile).
    public func complete(_ token: DownloadToken, _ result: Result<Delivered, Failure>) {
        guard let record = tokens[token], case .reserved(let wasCancelled) = record.place else {
            logger.error("completion of a token that was not reserved", metadata: ["token": "\(token)"])
            return
        }
        switch result {
        case _ where wasCancelled: finishToken(token, .cancelled)
        case .success(let delivered): finishToken(token, .success(delivered))
        case .failure(let failure): finishToken(token, .processingFailed(failure))
        }
    }

    /// A token joins a fetch that is already under way: it gets the fetch's events so far
    /// (`FetchOperation.join`), and a first streaming token the body so far.
    private func join(
        _ token: DownloadToken, fetch id: FetchID, priority: DownloadPriority, limits: FetchOperation.TokenLimits, streamsBody: Bool,
        processor: @escaping Processor
    ) {
        tokens.attach(token, to: id, processor: processor, now: clock())
        guard let fetch = fetches[id] else { return }
        switch fetch.machine.join(token, priority: priority, limits: limits, streamsBody: streamsBody) {
        case .none: break
        case .setQueuePriority(let changed): queue.setPriority(id, changed)
        case .catchUp(let events, let body):
            emit(events)
            if let body { fetch.running?.follower?.bodyArrived(offset: 0, bytes: body, tokens: fetch.machine.tokens.map(\.token)) }
        }
    }

    // MARK: Helpers

    /// What the per-host limits count by: scheme, host and port, as connections are pooled.
    static func hostKey(_ url: URL) -> String {
        url.isFileURL ? "file:" : HTTPLoader.origin(of: url)
    }

    /// The configured default headers merged with a request's own (the request wins, by name),
    /// plus the User-Agent and Accept defaults.
    private func effectiveHeaders(_ own: [(String, String)]) -> [(String, String)] {
        var result: [(String, String)] = [("User-Agent", configuration.sentUserAgent), ("Accept", "image/*,*/*;q=0.8")]
        func set(_ name: String, _ value: String) {
            result.removeAll { $0.0.caseInsensitiveCompare(name) == .orderedSame }
            result.append((name, value))
        }
        for (name, value) in configuration.headers.sorted(by: { $0.key < $1.key }) { set(name, value) }
        for (name, value) in own { set(name, value) }
        return result
    }
}
