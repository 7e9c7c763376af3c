import Foundation

/// Performing what `FetchOperation` decides: the fan-out of a fetch's events to its tokens, the
/// queue, each token's processing, the failed-URL list, and each token's one ending.
extension Downloader {
    func startFetches(_ ids: [FetchID]) {
        if !ids.isEmpty { lastActivity = clock() }
        for id in ids {
            guard let start = fetches[id]?.machine.start() else { continue }
            for token in start.started { started(token) }
            launchAttempt(id, start.launch)
        }
        wakeQueueWhenDue()
    }

    /// Keeps one timer for the earliest time a host's spacing lets a waiting fetch start.
    private func wakeQueueWhenDue() {
        guard let at = queue.nextWakeUp else { return }
        if let current = queueWake, current.at <= at { return }
        queueWake?.task.cancel()
        queueWake = (at, timer(at: at) { $0.queueWoke() })
    }

    /// A task that calls `fire` on the downloader at `at` (on its clock) unless cancelled first:
    /// the queue's wake-up and the attempts' idle deadlines each keep one.
    func timer(at: UInt64, _ fire: @escaping @Sendable (isolated Downloader) -> Void) -> Task<Void, Never> {
        let now = clock()
        let delay = at > now ? at - now : 0
        return Task {
            try? await Task.sleep(nanoseconds: delay)
            if Task.isCancelled { return }
            fire(self)
        }
    }

    private func queueWoke() {
        queueWake = nil
        startFetches(queue.tick(now: clock()))
    }

    /// Sends the machine's token events.
    func emit(_ events: [FetchOperation.TokenEvent]) {
        for event in events {
            switch event {
            case .started(let token):
                started(token)
            case .response(let token, let info):
                if tokens[token]?.quiet != true { sink(.response(token, url: tokens[token]?.url ?? "", info)) }
            case .progress(let token, let received, let expected):
                if tokens[token]?.quiet != true { sink(.progress(token, received: received, expected: expected)) }
            }
        }
    }

    private func started(_ token: DownloadToken) {
        tokens.markStarted(token, now: clock())
        if tokens[token]?.quiet != true { sink(.started(token, url: tokens[token]?.url ?? "")) }
        startDeadline(token)
    }

    /// A token ends before its processing: cancelled (`failure` nil) or failed.
    func end(_ token: DownloadToken, _ failure: DownloadFailure?) {
        processing.removeValue(forKey: token)?.cancel()
        finishToken(token, failure.map { .failure($0) } ?? .cancelled)
    }

    /// A token left a fetch (`cancel`, its deadline): it ends, then the fetch goes on or stops.
    func perform(_ id: FetchID, _ removal: FetchOperation.Removal?) {
        guard let removal else { return }
        end(removal.token, removal.failure)
        switch removal.then {
        case .none:
            break
        case .setQueuePriority(let priority):
            queue.setPriority(id, priority)
        case .dropQueued:
            leaveQueue(id)
            finish(id)
        case .stopTransfer:
            fetches[id]?.running?.tasks.transfer?.cancel()
            unwatch(id)
            leaveQueue(id)
            finish(id)
        case .stopRetryTimer:
            fetches[id]?.running?.tasks.retry?.cancel()
            leaveQueue(id)
            finish(id)
        case .endDelivery:
            finish(id)
        }
    }

    /// Out of the operation queue (a waiting place or a running slot): another fetch may start.
    func leaveQueue(_ id: FetchID) {
        startFetches(queue.remove(id, now: clock()))
    }

    /// The body is in (`bytes` of it): the running slot goes back, and the fetch counts in the
    /// delivery stage until it is finished. Counted first: the slot given back starts another
    /// fetch only if the delivery stage has room.
    func enterDelivery(_ id: FetchID, bytes: Int64) {
        startFetches(queue.enterDelivery(id, bytes: bytes, now: clock()))
    }

    /// Puts the fetch's URLs on the failed-URL list: its own, and each of `tokens`' as asked.
    func recordFailure(of fetch: Fetch, tokens failing: [DownloadToken], _ failure: DownloadFailure) {
        let expiry = UInt64(max(0, configuration.failedURLExpiryMs)) * 1_000_000
        for url in urlsOf(fetch, tokens: failing) {
            failedURLs.record(url, reason: failure.description, now: clock(), expiryNanos: expiry)
        }
    }

    /// Nothing is left of the fetch: it is forgotten.
    func finish(_ id: FetchID) {
        startFetches(queue.leaveDelivery(id, now: clock()))
        guard let fetch = fetches.removeValue(forKey: id) else { return }
        if let host = fetch.machine.takeHostAdmission()?.host {
            // Ended with an attempt in flight (cancelled): a probe's answer will not come.
            apply(hostHealth.ended(id, host: host, .abandoned, now: clock(), settings: configuration.hostHealthSettings), to: host)
        }
        totals.add(fetch.running?.metrics ?? FetchMetrics())
        if !fetch.machine.bodyDelivered { fetch.running?.follower?.fetchEnded() }
        unwatch(id)
        fetchByKey.remove(fetch)
    }

    /// Runs the token's processor on the fetched resource; its result (or failure) ends the
    /// token unless it was cancelled meanwhile.
    func process(_ token: DownloadToken, of id: FetchID, _ resource: FetchedResource) {
        guard let record = tokens[token], let processor = record.processor else { return }
        let ticket = ProcessingTicket(token: token, priority: record.priority, url: record.url)
        processing[token] = Task {
            let result: Result<Delivered, Failure>
            do throws(Failure) {
                result = .success(try await processor(resource, ticket))
            } catch {
                result = .failure(error)
            }
            self.processed(id, token, result)
        }
    }

    private func processed(_ id: FetchID, _ token: DownloadToken, _ result: Result<Delivered, Failure>) {
        processing[token] = nil
        lastActivity = clock()
        switch fetches[id]?.machine.tokenProcessed(token) ?? .dropResult {
        case .dropResult:
            if case .success(let value) = result { discarded?(value) }
        case .endToken(let fetchFinished):
            switch result {
            case .success(let value): finishToken(token, .success(value))
            case .failure(let failure): finishToken(token, .processingFailed(failure))
            }
            if fetchFinished { finish(id) }
        }
    }

    /// The URL strings `tokens` of this fetch asked for (the failed-URL list is keyed by them:
    /// they may differ from the fetch's, as a URL with spaces around it or a backslash for a
    /// slash is fetched as its normal form), and the fetch's own.
    func urlsOf(_ fetch: Fetch, tokens asking: [DownloadToken]) -> Set<String> {
        var urls: Set<String> = [fetch.url]
        for token in asking { if let url = tokens[token]?.url { urls.insert(url) } }
        return urls
    }

    /// A token with a deadline starts its timer when the token starts.
    private func startDeadline(_ token: DownloadToken) {
        guard let deadline = deadlines[token], deadline.timer == nil else { return }
        let ms = deadline.ms
        deadlines[token]?.timer = Task {
            try? await Task.sleep(for: .milliseconds(ms))
            guard !Task.isCancelled else { return }
            self.deadlineReached(token, ms)
        }
    }

    private func deadlineReached(_ token: DownloadToken, _ ms: Int64) {
        guard let record = tokens[token], case .attached(let id) = record.place else { return }
        perform(id, fetches[id]?.machine.deadlineReached(token, deadlineMs: ms))
    }

    /// A token's one `completed` event (its deadline timer stopped); the idle waiters resume when
    /// it was the last.
    func finishToken(_ token: DownloadToken, _ outcome: DownloadOutcome<Delivered, Failure>) {
        deadlines.removeValue(forKey: token)?.timer?.cancel()
        let url = tokens[token]?.url ?? ""
        let metrics = metrics(of: token)
        guard tokens.finish(token, outcome) else { return }
        sink(.completed(token, url: url, outcome, metrics: metrics))
        if tokens.isEmpty, !idleWaiters.isEmpty {
            let waiters = idleWaiters
            idleWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }

    /// A token's metrics now: its time in the queue, and its fetch's attempts.
    private func metrics(of token: DownloadToken) -> TransferMetrics {
        var metrics = TransferMetrics()
        guard let record = tokens[token] else { return metrics }
        let now = clock()
        if let enqueued = record.enqueuedAt {
            let until = record.startedAt ?? now
            metrics.queuedMs = until > enqueued ? Double(until - enqueued) / 1e6 : 0
        }
        if case .attached(let id) = record.place, let fetch = fetches[id] {
            fetch.running?.metrics.fill(&metrics, now: now)
        }
        return metrics
    }
}
