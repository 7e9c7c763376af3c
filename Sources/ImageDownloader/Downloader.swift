import Foundation
import InputValidation
import Logging
import NIOCore

/// The downloader: one operation queue, fetches shared by every token asking for the same
/// resource, cancel and priority by token. It performs what `DownloadQueue` and `FetchOperation`
/// decide and reports every token's events, in order, to `sink` (called on the actor, so events
/// of one token never race each other). Every token gets exactly one `completed` event.
///
/// A token's life: `reserve` (the token is taken, nothing is emitted yet), then `start` (it joins
/// or creates a fetch, or ends at once: invalid URL, blocked URL, cancelled while reserved).
/// The split lets the worker write the `download` response before any event of that token.
public actor Downloader<Delivered: Sendable> {
    public typealias Processor = @Sendable (FetchedResource) async throws -> Delivered
    public typealias EventSink = @Sendable (DownloadEvent<Delivered>) -> Void
    public typealias BodyObserver = @Sendable (BodyNotice) -> Void

    public struct TokenInUse: Error, Sendable {
        public let token: DownloadToken
    }

    public struct Status: Sendable {
        public struct LiveToken: Sendable {
            public var token: DownloadToken
            public var url: String
            public var priority: DownloadPriority
            /// reserved, queued, running, waitingToRetry or delivering.
            public var state: String
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

    private typealias FetchID = Int

    private struct Fetch {
        var machine: FetchOperation
        let key: FetchKey
        let request: LoadRequest
        let isFile: Bool
        let timeoutMs: Int64?
        var attempt = 0
        var attemptTask: Task<Void, Never>?
        var watchdog: Task<Void, Never>?
        var retryTask: Task<Void, Never>?
        var lastActivity: UInt64 = 0
        var timedOut = false
        var body = ByteBuffer()
        var resource: FetchedResource?
        /// A token asked for the body as it arrives.
        var streamsBody = false
    }

    private struct TokenRecord {
        enum State {
            case reserved(cancelled: Bool)
            case attached(FetchID)
        }
        var state: State
        var url: String
        var priority: DownloadPriority
        var processor: Processor?
    }

    public private(set) var configuration: DownloaderConfiguration
    private let httpLoader: any ResourceLoader
    private let fileLoader: FileLoader
    private let sink: EventSink
    private let bodyObserver: BodyObserver?
    private let logger: Logger
    private let clock: @Sendable () -> UInt64

    private var queue: DownloadQueue<FetchID>
    private var fetches: [FetchID: Fetch] = [:]
    private var fetchByKey: [FetchKey: FetchID] = [:]
    private var tokens: [DownloadToken: TokenRecord] = [:]
    private var failedURLs = FailedURLList()
    private var nextFetchID = 0
    private var succeeded = 0
    private var failed = 0
    private var cancelled = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private var held = false

    public init(
        configuration: DownloaderConfiguration,
        httpLoader: any ResourceLoader,
        fileURLPolicy: FileURLPolicy,
        logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        bodyObserver: BodyObserver? = nil,
        sink: @escaping EventSink
    ) {
        self.bodyObserver = bodyObserver
        self.configuration = configuration
        self.httpLoader = httpLoader
        self.fileLoader = FileLoader(policy: fileURLPolicy)
        self.logger = logger
        self.clock = clock
        self.sink = sink
        self.queue = DownloadQueue(
            maxConcurrent: configuration.maxConcurrentDownloads, order: configuration.executionOrder,
            suspended: configuration.suspended)
    }

    // MARK: Requests

    /// Takes `token` for a download that `start` will begin. Fails if the token is live.
    public func reserve(_ token: DownloadToken, url: String, priority: DownloadPriority) throws(TokenInUse) {
        guard tokens[token] == nil else { throw TokenInUse(token: token) }
        // The URL as shown (events, status, logs): without user information.
        tokens[token] = TokenRecord(state: .reserved(cancelled: false), url: DownloadURL.redacted(url), priority: priority)
    }

    /// Begins the download of a reserved token. `processor` turns the fetched body into what the
    /// token asked for; its `DownloadFailure` fails that token alone.
    public func start(_ request: DownloadRequest, processor: @escaping Processor) {
        guard let record = tokens[request.token], case .reserved(let wasCancelled) = record.state else {
            logger.error("start of a token that was not reserved", metadata: ["token": "\(request.token)"])
            return
        }
        let token = request.token
        if wasCancelled {
            finishToken(token, .cancelled)
            return
        }
        let priority = record.priority
        let url: URL
        let credentials: Credentials?
        do {
            let parsed = try DownloadURL.checked(request.url, fileURLsEnabled: fileLoader.policy.root != nil)
            url = parsed.url
            credentials = request.credentials ?? parsed.userInfo.map { Credentials(user: $0.user, password: $0.password) }
            if url.isFileURL { _ = try fileLoader.policy.resolve(url) }
        } catch {
            finishToken(token, .failure(error))
            return
        }
        let now = clock()
        if !request.retryFailed, let entry = failedURLs.blocking(record.url, now: now) {
            finishToken(token, .failure(.blocked(since: entry.reason)))
            return
        }
        let headers = effectiveHeaders(request.headers)
        let key = FetchKey(
            url: url, headers: headers, credentials: credentials,
            allowInvalidCertificates: request.allowInvalidCertificates, handleCookies: request.handleCookies)
        tokens[token]?.processor = processor

        if let id = fetchByKey[key], let fetch = fetches[id], fetch.machine.acceptsTokens {
            tokens[token]?.state = .attached(id)
            if request.streamsBody { fetches[id]!.streamsBody = true }
            perform(id, fetches[id]!.machine.join(token, priority: priority))
            // The first streaming token joins late: the observer gets the bytes so far first.
            if request.streamsBody, fetch.body.readableBytes > 0, !fetch.streamsBody {
                bodyObserver?(.chunk(fetchID: id, offset: 0, bytes: fetch.body, tokens: fetches[id]!.machine.tokens.map(\.token)))
            }
            return
        }
        let id = nextFetchID
        nextFetchID += 1
        let loadRequest = LoadRequest(
            url: url, headers: headers, credentials: credentials,
            allowInvalidCertificates: request.allowInvalidCertificates, handleCookies: request.handleCookies,
            maxRedirects: configuration.maxRedirects, timeoutMs: request.timeoutMs ?? configuration.timeoutMs)
        fetches[id] = Fetch(
            machine: FetchOperation(token: token, priority: priority), key: key, request: loadRequest,
            isFile: url.isFileURL, timeoutMs: request.timeoutMs, streamsBody: request.streamsBody)
        fetchByKey[key] = id
        tokens[token]?.state = .attached(id)
        startFetches(queue.enqueue(id, priority: priority))
    }

    /// Cancels one token. Idempotent: returns whether the token was live.
    @discardableResult
    public func cancel(_ token: DownloadToken) -> Bool {
        guard let record = tokens[token] else { return false }
        switch record.state {
        case .reserved:
            tokens[token]?.state = .reserved(cancelled: true)
        case .attached(let id):
            if fetches[id] != nil { perform(id, fetches[id]!.machine.cancel(token)) }
        }
        return true
    }

    /// Cancels every live token: those waiting in the queue first, so that no new fetch starts in
    /// the slots the running ones free. Returns how many were cancelled.
    @discardableResult
    public func cancelAll() -> Int {
        var order: [DownloadToken] = []
        var seen: Set<DownloadToken> = []
        func add(_ t: DownloadToken) { if seen.insert(t).inserted { order.append(t) } }
        for (token, record) in tokens { if case .reserved = record.state { add(token) } }
        for id in queue.waitingInStartOrder.reversed() {
            for entry in fetches[id]?.machine.tokens ?? [] { add(entry.token) }
        }
        for token in tokens.keys { add(token) }
        var count = 0
        for token in order where cancel(token) { count += 1 }
        return count
    }

    @discardableResult
    public func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) -> Bool {
        guard let record = tokens[token] else { return false }
        tokens[token]?.priority = priority
        if case .attached(let id) = record.state, fetches[id] != nil {
            perform(id, fetches[id]!.machine.setPriority(token, priority))
        }
        return true
    }

    public func configure(_ newValue: DownloaderConfiguration) {
        configuration = newValue
        queue.setOrder(newValue.executionOrder)
        startFetches(queue.setMaxConcurrent(newValue.maxConcurrentDownloads))
        startFetches(queue.setSuspended(newValue.suspended || held))
    }

    /// While held, no fetch starts (running ones go on): the worker holds the queue while its
    /// reader has fallen behind, so that output, and the memory behind it, stays bounded.
    /// Independent of the configured `suspended`.
    public func setHeld(_ value: Bool) {
        guard value != held else { return }
        held = value
        logger.debug(value ? "holding the queue: output is backed up" : "output caught up: the queue goes on")
        startFetches(queue.setSuspended(configuration.suspended || held))
    }

    /// Lifts `suspended` so that everything accepted can finish (stdin's end with `drain`,
    /// `shutdown`): a suspended queue would otherwise never end its waiting tokens.
    public func resumeToDrain() {
        guard configuration.suspended else { return }
        logger.info("resuming the suspended queue to finish what was accepted")
        configuration.suspended = false
        startFetches(queue.setSuspended(held))
    }

    public func clearFailedURLs() { failedURLs.removeAll() }

    public var liveTokenCount: Int { tokens.count }

    public func status() -> Status {
        var queuedTokens = 0
        var runningTokens = 0
        var live: [Status.LiveToken] = []
        for (token, record) in tokens {
            var state = "reserved"
            var received: Int64 = 0
            var expected: Int64? = nil
            if case .attached(let id) = record.state, let fetch = fetches[id] {
                state = fetch.machine.state.description
                received = fetch.machine.receivedBytes
                expected = fetch.machine.response?.expectedBytes
            }
            if state == "reserved" || state == "queued" { queuedTokens += 1 } else { runningTokens += 1 }
            live.append(.init(token: token, url: record.url, priority: record.priority, state: state, receivedBytes: received, expectedBytes: expected))
        }
        live.sort { $0.token.description < $1.token.description }
        return Status(
            queuedFetches: queue.waitingCount, runningFetches: queue.runningCount, queuedTokens: queuedTokens,
            runningTokens: runningTokens, succeeded: succeeded, failed: failed, cancelled: cancelled,
            blockedURLs: failedURLs.count, liveTokens: live, configuration: configuration)
    }

    /// Returns once no token is live.
    public func waitUntilIdle() async {
        if tokens.isEmpty { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    // MARK: Performing actions

    private func startFetches(_ ids: [FetchID]) {
        for id in ids where fetches[id] != nil {
            perform(id, fetches[id]!.machine.start())
        }
    }

    private func perform(_ id: FetchID, _ actions: [FetchOperation.Action]) {
        for action in actions {
            switch action {
            case .emitStarted(let token):
                sink(.started(token, url: tokens[token]?.url ?? ""))
            case .emitResponse(let token, let info):
                sink(.response(token, info))
            case .emitProgress(let token, let received, let expected):
                sink(.progress(token, received: received, expected: expected))
            case .emitCancelled(let token):
                finishToken(token, .cancelled)
            case .emitFailure(let token, let failure):
                finishToken(token, .failure(failure))
            case .process(let token):
                guard let resource = fetches[id]?.resource, let processor = tokens[token]?.processor else { continue }
                Task {
                    let result: Result<Delivered, DownloadFailure>
                    do {
                        result = .success(try await processor(resource))
                    } catch let failure as DownloadFailure {
                        result = .failure(failure)
                    } catch {
                        result = .failure(.output(String(describing: error), path: nil))
                    }
                    self.processed(id, token, result)
                }
            case .setQueuePriority(let priority):
                queue.setPriority(id, priority)
            case .leaveQueue:
                startFetches(queue.remove(id))
            case .startAttempt(let attempt):
                launchAttempt(id, attempt)
            case .cancelAttempt:
                fetches[id]?.attemptTask?.cancel()
                fetches[id]?.watchdog?.cancel()
            case .scheduleRetry(let attempt, let delayMs):
                fetches[id]?.watchdog?.cancel()
                logger.info("retrying", metadata: ["url": "\(fetches[id]?.request.url.absoluteString ?? "")", "attempt": "\(attempt)", "delayMs": "\(delayMs)"])
                fetches[id]?.retryTask = Task {
                    try? await Task.sleep(nanoseconds: UInt64(delayMs) * 1_000_000)
                    if Task.isCancelled { return }
                    self.retryFired(id)
                }
            case .cancelRetryTimer:
                fetches[id]?.retryTask?.cancel()
            case .recordFailure(let failure):
                if let fetch = fetches[id] {
                    let expiry = UInt64(max(0, configuration.failedURLExpiryMs)) * 1_000_000
                    for url in urlsOf(fetch) {
                        failedURLs.record(url, reason: failure.description, now: clock(), expiryNanos: expiry)
                    }
                }
            case .recordSuccess:
                if let fetch = fetches[id] { for url in urlsOf(fetch) { failedURLs.remove(url) } }
            case .finished:
                if let fetch = fetches.removeValue(forKey: id) {
                    if fetch.streamsBody && fetch.resource == nil { bodyObserver?(.abort(fetchID: id)) }
                    fetch.watchdog?.cancel()
                    if fetchByKey[fetch.key] == id { fetchByKey[fetch.key] = nil }
                }
            }
        }
    }

    /// The URL strings the tokens of this fetch asked for (the failed-URL list is keyed by them).
    private func urlsOf(_ fetch: Fetch) -> Set<String> {
        var urls: Set<String> = [fetch.request.url.absoluteString]
        for entry in fetch.machine.tokens { if let url = tokens[entry.token]?.url { urls.insert(url) } }
        return urls
    }

    private func finishToken(_ token: DownloadToken, _ outcome: DownloadOutcome<Delivered>) {
        guard tokens.removeValue(forKey: token) != nil else { return }
        switch outcome {
        case .success: succeeded += 1
        case .failure: failed += 1
        case .cancelled: cancelled += 1
        }
        sink(.completed(token, outcome))
        if tokens.isEmpty, !idleWaiters.isEmpty {
            let waiters = idleWaiters
            idleWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    // MARK: Attempts

    private func launchAttempt(_ id: FetchID, _ attempt: Int) {
        guard var fetch = fetches[id] else { return }
        fetch.attempt = attempt
        fetch.body = ByteBuffer()
        fetch.timedOut = false
        fetch.lastActivity = clock()
        var request = fetch.request
        request.timeoutMs = fetch.timeoutMs ?? configuration.timeoutMs
        request.maxRedirects = configuration.maxRedirects
        let loader: any ResourceLoader = fetch.isFile ? fileLoader : httpLoader
        fetch.attemptTask = Task {
            // The idle clock starts when the attempt runs, not when it was asked for: a task that
            // waited for a thread (a busy process) has not been waiting for the server.
            self.attemptBegan(id, attempt)
            do {
                try await loader.load(
                    request,
                    onHead: { head in try await self.headReceived(id, attempt, head) },
                    onChunk: { chunk in try await self.chunkReceived(id, attempt, chunk) })
                self.attemptEnded(id, attempt, nil)
            } catch {
                self.attemptEnded(id, attempt, error)
            }
        }
        fetches[id] = fetch
    }

    private func attemptBegan(_ id: FetchID, _ attempt: Int) {
        guard isCurrent(id, attempt), !Task.isCancelled else { return }
        fetches[id]!.lastActivity = clock()
        fetches[id]!.watchdog = Task { await self.watch(id, attempt) }
    }

    private func isCurrent(_ id: FetchID, _ attempt: Int) -> Bool {
        guard let fetch = fetches[id], fetch.attempt == attempt, case .running(let a) = fetch.machine.state else { return false }
        return a == attempt
    }

    private func headReceived(_ id: FetchID, _ attempt: Int, _ head: LoadedHead) throws {
        guard isCurrent(id, attempt) else { throw CancellationError() }
        fetches[id]!.lastActivity = clock()
        switch head.status {
        case 200..<300:
            break
        case 304:
            throw DownloadFailure.notModified
        default:
            let retryAfter = head.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0) }
            throw DownloadFailure.statusCode(head.status, retryAfterSeconds: retryAfter)
        }
        let length = head.header("Content-Length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        if let length, length > configuration.maxBodyBytes {
            throw DownloadFailure.limitExceeded(.bodyBytes, limit: configuration.maxBodyBytes, actual: length)
        }
        if let length, length > 0, length <= 64 << 20 {
            fetches[id]!.body.reserveCapacity(Int(length))
        }
        let mime = head.header("Content-Type").map {
            $0.split(separator: ";", maxSplits: 1)[0].trimmingCharacters(in: .whitespaces).lowercased()
        }
        let info = ResponseInfo(
            status: head.status, expectedBytes: length, mimeType: mime?.isEmpty == false ? mime : nil,
            finalURL: head.finalURL.absoluteString, httpVersion: head.httpVersion)
        perform(id, fetches[id]!.machine.responseReceived(info, now: clock()))
    }

    private func chunkReceived(_ id: FetchID, _ attempt: Int, _ chunk: ByteBuffer) throws {
        guard isCurrent(id, attempt) else { throw CancellationError() }
        let offset = Int64(fetches[id]!.body.readableBytes)
        var copy = chunk
        fetches[id]!.body.writeBuffer(&copy)
        let total = Int64(fetches[id]!.body.readableBytes)
        if fetches[id]!.streamsBody {
            bodyObserver?(.chunk(fetchID: id, offset: offset, bytes: chunk, tokens: fetches[id]!.machine.tokens.map(\.token)))
        }
        if total > configuration.maxBodyBytes {
            throw DownloadFailure.limitExceeded(.bodyBytes, limit: configuration.maxBodyBytes, actual: nil)
        }
        let now = clock()
        fetches[id]!.lastActivity = now
        perform(id, fetches[id]!.machine.bodyReceived(total: total, now: now, throttle: ProgressThrottle(configuration)))
    }

    private func attemptEnded(_ id: FetchID, _ attempt: Int, _ error: (any Error)?) {
        guard isCurrent(id, attempt) else { return }
        fetches[id]!.watchdog?.cancel()
        fetches[id]!.attemptTask = nil
        var failure: DownloadFailure?
        if let error {
            if fetches[id]!.timedOut {
                // The idle watchdog stopped the attempt: whatever the loader threw on the way out.
                failure = .network(.timeout, "no data for \(fetches[id]!.timeoutMs ?? configuration.timeoutMs) ms")
            } else if let f = error as? DownloadFailure {
                failure = f
            } else if error is CancellationError {
                failure = .network(.io, "the transfer was cancelled")
            } else {
                failure = .network(.connection, String(describing: error))
            }
        } else {
            let fetch = fetches[id]!
            let received = Int64(fetch.body.readableBytes)
            if let expected = fetch.machine.response?.expectedBytes, received < expected {
                failure = .network(.truncated, "body ended after \(received) of \(expected) bytes")
            } else if received == 0 {
                failure = .badData("Image data is nil: the response body is empty")
            }
        }
        if let failure {
            logger.debug("attempt failed", metadata: ["url": "\(fetches[id]!.request.url.absoluteString)", "attempt": "\(attempt)", "error": "\(failure)"])
            perform(id, fetches[id]!.machine.attemptFailed(failure, retryPolicy: RetryPolicy(configuration), jitter: Double.random(in: 0..<1)))
            return
        }
        let fetch = fetches[id]!
        if fetch.streamsBody { bodyObserver?(.end(fetchID: id)) }
        fetches[id]!.resource = FetchedResource(
            response: fetch.machine.response!, body: fetch.body, fetchID: id, consumers: fetch.machine.tokens.count)
        fetches[id]!.body = ByteBuffer()
        perform(id, fetches[id]!.machine.attemptSucceeded(now: clock()))
    }

    private func retryFired(_ id: FetchID) {
        guard fetches[id] != nil else { return }
        perform(id, fetches[id]!.machine.retryTimerFired())
    }

    /// The idle timeout: fails the attempt when no byte (or head) arrived for the request's
    /// timeout, or else the configured one (read each time, so `configure` applies at once).
    private func watch(_ id: FetchID, _ attempt: Int) async {
        while !Task.isCancelled {
            guard isCurrent(id, attempt), let fetch = fetches[id] else { return }
            let timeoutNanos = UInt64(max(1, fetch.timeoutMs ?? configuration.timeoutMs)) * 1_000_000
            let deadline = fetch.lastActivity &+ timeoutNanos
            let now = clock()
            if now >= deadline {
                fetches[id]!.timedOut = true
                fetch.attemptTask?.cancel()
                return
            }
            try? await Task.sleep(nanoseconds: deadline - now)
        }
    }

    private func processed(_ id: FetchID, _ token: DownloadToken, _ result: Result<Delivered, DownloadFailure>) {
        guard fetches[id] != nil else { return }
        let (live, actions) = fetches[id]!.machine.tokenProcessed(token)
        if live {
            switch result {
            case .success(let value): finishToken(token, .success(value))
            case .failure(let f): finishToken(token, .failure(f))
            }
        }
        perform(id, actions)
    }

    // MARK: Helpers

    /// The configured default headers merged with a request's own (the request wins, by name),
    /// plus the User-Agent and Accept defaults.
    private func effectiveHeaders(_ own: [(String, String)]) -> [(String, String)] {
        var result: [(String, String)] = [("User-Agent", configuration.userAgent), ("Accept", "image/*,*/*;q=0.8")]
        func set(_ name: String, _ value: String) {
            result.removeAll { $0.0.caseInsensitiveCompare(name) == .orderedSame }
            result.append((name, value))
        }
        for (name, value) in configuration.headers.sorted(by: { $0.key < $1.key }) { set(name, value) }
        for (name, value) in own { set(name, value) }
        return result
    }

}
