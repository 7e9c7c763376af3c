import Foundation

/// Performing `FetchOperation`'s actions: the fan-out of a fetch's events to its tokens, the
/// queue, each token's processing, the failed-URL list, and each token's one ending.
extension Downloader {
    func startFetches(_ ids: [FetchID]) {
        for id in ids {
            guard let actions = update(id, { $0.machine.start() }) else { continue }
            perform(id, actions)
        }
        wakeQueueWhenDue()
    }

    /// Keeps one timer for the earliest time a host's spacing lets a waiting fetch start.
    private func wakeQueueWhenDue() {
        guard let at = queue.nextWakeUp else { return }
        if let current = queueWake, current.at <= at { return }
        queueWake?.task.cancel()
        let delay = at > clock() ? at - clock() : 0
        queueWake = (
            at,
            Task {
                try? await Task.sleep(nanoseconds: delay)
                if Task.isCancelled { return }
                self.queueWoke()
            }
        )
    }

    private func queueWoke() {
        queueWake = nil
        startFetches(queue.tick(now: clock()))
    }

    func perform(_ id: FetchID, _ actions: [FetchOperation.Action]) {
        for action in actions {
            switch action {
            case .emitStarted(let token):
                tokens.markStarted(token, now: clock())
                if tokens[token]?.quiet != true { sink(.started(token, url: tokens[token]?.url ?? "")) }
                startDeadline(token)
            case .emitResponse(let token, let info):
                if tokens[token]?.quiet != true { sink(.response(token, url: tokens[token]?.url ?? "", info)) }
            case .emitProgress(let token, let received, let expected):
                if tokens[token]?.quiet != true { sink(.progress(token, received: received, expected: expected)) }
            case .emitCancelled(let token):
                processing.removeValue(forKey: token)?.cancel()
                finishToken(token, .cancelled)
            case .emitFailure(let token, let failure):
                processing.removeValue(forKey: token)?.cancel()
                finishToken(token, .failure(failure))
            case .process(let token):
                process(token, of: id)
            case .setQueuePriority(let priority):
                queue.setPriority(id, priority)
            case .leaveQueue:
                startFetches(queue.remove(id, now: clock()))
            case .enterDelivery:
                // Counted first: the slot given back starts another fetch only if the delivery
                // stage has room.
                delivering.insert(id)
                startFetches(queue.setSuspended(queueHeld, now: clock()))
                startFetches(queue.remove(id, now: clock()))
            case .startAttempt(let attempt):
                launchAttempt(id, attempt)
            case .cancelAttempt:
                update(id) { fetch in
                    fetch.tasks.transfer?.cancel()
                    fetch.tasks.watchdog?.cancel()
                }
            case .scheduleRetry(let attempt, let delayMs):
                scheduleRetry(id, attempt: attempt, delayMs: delayMs)
            case .cancelRetryTimer:
                update(id) { $0.tasks.retry?.cancel() }
            case .recordFailure(let failure):
                guard let fetch = fetches[id] else { continue }
                let expiry = UInt64(max(0, configuration.failedURLExpiryMs)) * 1_000_000
                for url in urlsOf(fetch) {
                    failedURLs.record(url, reason: failure.description, now: clock(), expiryNanos: expiry)
                }
            case .recordSuccess:
                guard let fetch = fetches[id] else { continue }
                for url in urlsOf(fetch) { failedURLs.remove(url) }
            case .finished:
                if delivering.remove(id) != nil { startFetches(queue.setSuspended(queueHeld, now: clock())) }
                guard let fetch = fetches.removeValue(forKey: id) else { continue }
                totals.add(fetch.metrics)
                if fetch.streamsBody && fetch.resource == nil { bodyObserver?(.abort(fetchID: id)) }
                fetch.tasks.watchdog?.cancel()
                fetchByKey.remove(fetch)
            }
        }
    }

    /// Runs the token's processor on the fetched resource; its result (or failure) ends the
    /// token unless it was cancelled meanwhile.
    private func process(_ token: DownloadToken, of id: FetchID) {
        guard let resource = fetches[id]?.resource, let record = tokens[token], let processor = record.processor else { return }
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
        guard let (live, actions) = update(id, { $0.machine.tokenProcessed(token) }) else {
            if case .success(let value) = result { discarded?(value) }
            return
        }
        if live {
            switch result {
            case .success(let value): finishToken(token, .success(value))
            case .failure(let failure): finishToken(token, .processingFailed(failure))
            }
        } else if case .success(let value) = result {
            discarded?(value)
        }
        perform(id, actions)
    }

    /// The URL strings the tokens of this fetch asked for (the failed-URL list is keyed by them).
    private func urlsOf(_ fetch: Fetch) -> Set<String> {
        var urls: Set<String> = [fetch.url]
        for entry in fetch.machine.tokens { if let url = tokens[entry.token]?.url { urls.insert(url) } }
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
        perform(id, update(id) { $0.machine.deadlineReached(token, deadlineMs: ms) } ?? [])
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
            fetch.metrics.fill(&metrics, now: now)
        }
        return metrics
    }
}
