import Foundation
import NIOCore

/// Each attempt's I/O: the loader's task and the retry timer (its idle deadline is watched in
/// `Downloader+Watchdog.swift`). What an event means is the fetch machine's to say
/// (`FetchOperation+Transfer`, with `FetchAttempt` inside); this file only runs the tasks, hands
/// them the events and performs the answers.
extension Downloader {
    /// Runs attempt `launch.attempt` of fetch `id`.
    func launchAttempt(_ id: FetchID, _ launch: FetchOperation.Launch) {
        guard let fetch = fetches[id] else { return }
        let number = launch.attempt
        var request = fetch.request
        request.timeoutMs = fetch.timeoutMs ?? configuration.timeoutMs
        request.maxRedirects = configuration.maxRedirects
        request.proxies = configuration.proxies
        request.resume = launch.resume
        let loader: any ResourceLoader = fetch.isFile ? fileLoader : httpLoader
        let io = fetch.runs()
        if io.follower == nil { io.follower = followers?(id) }
        // A host that is down: the attempt ends at once (but for its probe), holding no slot for
        // a connect timeout.
        var refusal: DownloadFailure? = nil
        // nil: not admitted (a file, a refusal, the cache's answer); .some(nil): admitted, its
        // host's key not made yet.
        var admittedTo: String?? = nil
        if !fetch.isFile {
            if hostHealth.isEmpty {
                admittedTo = .some(nil)
            } else {
                let host = Downloader.hostKey(request.url)
                // A down host's attempt that the HTTP cache answers goes, neither probe nor refused.
                if !(hostHealth.isDown(host) && loader.answersWithoutNetwork(request)) {
                    switch hostHealth.admit(id, host: host, now: clock(), settings: configuration.hostHealthSettings) {
                    case .go: admittedTo = host
                    case .probe(let holdsOthers):
                        admittedTo = host
                        if holdsOthers { queue.holdProbing(host) }  // the host's other downloads wait for its answer
                    case .refuse(let failure): refusal = failure
                    }
                }
            }
        }
        fetch.machine.attemptLaunched(number, admittedTo: admittedTo)
        let transfer = Task {
            self.attemptBegan(id, number)
            if let refusal {
                self.attemptEnded(id, number, refusal)
                return
            }
            do {
                try await loader.load(
                    request,
                    onHead: { head in try await self.headReceived(id, number, head) },
                    onChunk: { chunk in try await self.chunkReceived(id, number, chunk) })
                self.attemptEnded(id, number, nil)
            } catch {
                self.attemptEnded(id, number, error)
            }
        }
        io.metrics.attempts += 1
        if launch.resume != nil { io.metrics.resumed += 1 }
        io.metrics.attemptBeganAt = nil
        io.metrics.headAt = nil
        io.metrics.endedAt = nil
        io.tasks.transfer = transfer
        // Resumed, the body so far stays (never fetched or decoded twice); else it starts over.
        if launch.discardsBody { io.follower?.bodyRestarted() }
    }

    private func attemptBegan(_ id: FetchID, _ number: Int) {
        guard !Task.isCancelled, let fetch = fetches[id] else { return }
        let now = clock()
        lastActivity = now
        guard fetch.machine.attemptBegan(number, now: now) else { return }
        fetch.runs().metrics.attemptBeganAt = now
        watch(id, number, from: now, timeoutMs: fetch.timeoutMs ?? configuration.timeoutMs)
    }

    private func headReceived(_ id: FetchID, _ number: Int, _ head: LoadedHead) throws {
        guard let fetch = fetches[id], fetch.machine.isTransferring(number) else { throw CancellationError() }
        let length = head.header("Content-Length").flatMap { Int64($0) ?? Int64($0.trimmingCharacters(in: .whitespaces)) }
        let now = clock()
        let io = fetch.runs()
        lastActivity = now
        io.metrics.headAt = now
        io.metrics.head = (head.httpVersion, head.connection, head.redirects, head.cache)
        answered(id)
        let mime = head.header("Content-Type").map { value -> String in
            let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let plain = type.utf8.allSatisfy { (0x21...0x7E).contains($0) && !(0x41...0x5A).contains($0) }
            return plain ? String(type) : type.trimmingCharacters(in: .whitespaces).lowercased()
        }
        let info = ResponseInfo(
            status: head.status, expectedBytes: length, mimeType: mime?.isEmpty == false ? mime : nil,
            // (A fragment is never fetched, and tokens whose URLs differ only there share the fetch.)
            finalURL: String(head.finalURL.absoluteString.prefix { $0 != "#" }), httpVersion: head.httpVersion, cache: head.cache)
        let taken = FetchOperation.Head(
            info: info, contentRange: head.header("Content-Range"),
            retryAfterSeconds: head.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0) },
            validator: ResumePoint.validator(headers: head.headers),
            // (Read only when some directive refuses: nothing is done per response otherwise.)
            robotsTags: robotsPolicy.disallowed.isEmpty
                ? [] : head.headers.filter { $0.0.caseInsensitiveCompare("X-Robots-Tag") == .orderedSame }.map(\.1))
        switch fetch.machine.headReceived(number, taken, maxBodyBytes: configuration.maxBodyBytes, robots: robotsPolicy, now: now) {
        case .stale:
            throw CancellationError()
        case .refuse(let failure):
            throw failure
        case .accept(let events, let discardsBody):
            if discardsBody { io.follower?.bodyRestarted() }
            emit(events)
        }
    }

    private func chunkReceived(_ id: FetchID, _ number: Int, _ chunk: ByteBuffer) throws {
        guard let fetch = fetches[id] else { throw CancellationError() }
        let now = clock()
        lastActivity = now
        let action = fetch.machine.bodyReceived(
            number, chunk, maxBodyBytes: configuration.maxBodyBytes, now: now, throttle: ProgressThrottle(configuration))
        let offset: Int64
        switch action {
        case .stale: throw CancellationError()
        case .accept(let at, _), .refuse(let at, _): offset = at
        }
        let io = fetch.runs()
        if io.metrics.head?.cache == CacheUse.none { io.metrics.wireBytes += Int64(chunk.readableBytes) }
        if fetch.machine.streamsBody {
            io.follower?.bodyArrived(offset: offset, bytes: chunk, tokens: fetch.machine.tokens.map(\.token))
        }
        switch action {
        case .refuse(_, let failure): throw failure
        case .accept(_, let events): emit(events)
        case .stale: break
        }
    }

    private func attemptEnded(_ id: FetchID, _ number: Int, _ error: (any Error)?) {
        guard let fetch = fetches[id] else { return }
        let now = clock()
        lastActivity = now
        let notReached = error as? HostNotReached
        let action = fetch.machine.attemptEnded(
            number, error: notReached?.underlying ?? error, retryPolicy: RetryPolicy(configuration), jitter: Double.random(in: 0..<1),
            now: now)
        // (A stale end leaves the admission to the fetch's own end: reported abandoned there.)
        if case .stale = action { return }
        let io = fetch.runs()
        if let admission = fetch.machine.takeHostAdmission(of: number) {
            let outcome = Self.hostOutcome(action, notReached: notReached != nil, connected: io.metrics.headAt != nil && io.metrics.head?.connection != nil)
            // (Reaching a host when none is failing changes nothing: the common case, kept cheap.)
            if outcome != .reached || !hostHealth.isEmpty {
                let host = admission.host ?? Downloader.hostKey(fetch.parsedURL)
                apply(hostHealth.ended(id, host: host, outcome, now: now, settings: configuration.hostHealthSettings), to: host)
            }
        }
        io.metrics.endedAt = now
        unwatch(id)
        io.tasks.transfer = nil
        switch action {
        case .stale:
            return
        case .retry(let cause, let failing, let failure, let attempt, let delayMs):
            logger.debug("attempt failed", metadata: ["url": "\(fetch.url)", "attempt": "\(number)", "error": "\(cause)"])
            for token in failing { end(token, failure) }
            scheduleRetry(id, attempt: attempt, delayMs: delayMs)
            // With nothing kept to resume from, the running slot is lent to other hosts during the delay.
            if !fetch.machine.keepsSlotWhileWaiting { startFetches(queue.park(id, now: clock())) }
        case .fail(let cause, let failing, let failure, let blocksURL):
            logger.debug("attempt failed", metadata: ["url": "\(fetch.url)", "attempt": "\(number)", "error": "\(cause)"])
            leaveQueue(id)
            // (Before the tokens end: their URLs as asked are known until then.)
            if blocksURL { recordFailure(of: fetch, tokens: failing, failure) }
            for token in failing { end(token, failure) }
            finish(id)
        case .deliver(let delivery):
            io.follower?.bodyComplete()
            emit(delivery.progress)
            let resource = FetchedResource(
                response: delivery.response, body: delivery.body, fetchID: id, consumers: delivery.tokens.count, streamed: fetch.machine.streamsBody,
                follower: io.follower)
            for url in urlsOf(fetch, tokens: delivery.tokens) { failedURLs.remove(url) }
            enterDelivery(id, bytes: Int64(delivery.body.readableBytes))
            for token in delivery.tokens { process(token, of: id, resource) }
        }
    }

    /// Performs what an attempt's end changed for its host: its downloads wait, go on, or end.
    func apply(_ change: HostHealth<FetchID>.Change, to host: String) {
        switch change {
        case .none:
            return
        case .hold(let until):
            let now = clock()
            if queue.isHeld(host) {
                let ms = until > now ? (until - now) / 1_000_000 : 0
                logger.debug("host is still down: its downloads wait for the next probe", metadata: ["host": "\(host)", "ms": "\(ms)"])
            } else {
                logger.warning("host is down: its downloads wait", metadata: ["host": "\(host)", "maxMs": "\(configuration.hostDownMs)"])
            }
            startFetches(queue.holdHost(host, until: until, now: now))
        case .back:
            logger.notice("host is back", metadata: ["host": "\(host)"])
            startFetches(queue.releaseHost(host, now: clock()))
        case .gaveUp:
            guard queue.isHeld(host) else { return }
            logger.warning("host is still down: its downloads fail", metadata: ["host": "\(host)"])
            startFetches(queue.releaseHost(host, now: clock()))
        }
    }

    /// How an admitted attempt ended for its host. The loader says when a request to the URL's
    /// host never reached a connection (`HostNotReached`); an attempt that had no head for its
    /// idle timeout did not reach it either (the host is silent); any other end of an attempt
    /// that went to the network reached it (a head came on a connection, or it failed after one).
    static func hostOutcome(_ action: FetchOperation.EndAction, notReached: Bool, connected: Bool) -> HostHealth<FetchID>.Outcome {
        let cause: DownloadFailure
        switch action {
        case .stale: return .abandoned  // (not called for it)
        case .deliver: return connected ? .reached : .abandoned
        case .retry(let c, _, _, _, _), .fail(let c, _, _, _): cause = c
        }
        if notReached { return cause.isConnectionFailure ? .notReached(cause) : .abandoned }
        if connected { return .reached }
        // Connected, and nothing came back for the idle timeout: a silent host, as unreachable
        // as a refusing one for whoever waits on it.
        if cause.isIdleTimeout { return .notReached(cause) }
        // Failures thrown before any request (the cache's `cacheOnly`, a bad URL) say nothing.
        guard case .network(let reason, _) = cause, reason != .notCached, reason != .deadline else { return .abandoned }
        return .reached
    }

    func scheduleRetry(_ id: FetchID, attempt: Int, delayMs: Int64) {
        logger.info("retrying", metadata: ["url": "\(fetches[id]?.url ?? "")", "attempt": "\(attempt)", "delayMs": "\(delayMs)"])
        let timer = Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, delayMs)) * 1_000_000)
            if Task.isCancelled { return }
            self.retryFired(id)
        }
        unwatch(id)
        fetches[id]?.running?.tasks.retry = timer
    }

    /// The delay is over: a fetch that kept its slot runs its next attempt now; one that lent it
    /// waits in the queue again, at its place, and the queue's start runs the attempt.
    private func retryFired(_ id: FetchID) {
        guard let fetch = fetches[id] else { return }
        if queue.isParked(id) {
            startFetches(queue.unpark(id, priority: fetch.machine.effectivePriority, now: clock()))
            return
        }
        guard let launch = fetch.machine.retryTimerFired() else { return }
        launchAttempt(id, launch)
    }
}
