import Foundation
import NIOCore

/// Each attempt's I/O: the loader's task, the idle watchdog and the retry timer. What an event
/// means is `FetchAttempt`'s to say (and then `FetchOperation`'s); this file only runs the tasks
/// and hands them the events.
extension Downloader {
    func launchAttempt(_ id: FetchID, _ number: Int) {
        guard let fetch = fetches[id] else { return }
        var request = fetch.request
        request.timeoutMs = fetch.timeoutMs ?? configuration.timeoutMs
        request.maxRedirects = configuration.maxRedirects
        request.proxies = configuration.proxies
        request.resume = fetch.resume
        let loader: any ResourceLoader = fetch.isFile ? fileLoader : httpLoader
        let transfer = Task {
            self.attemptBegan(id, number)
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
        let restarts = fetch.resume == nil && fetch.body.readableBytes > 0 && fetch.streamsBody
        update(id) { fetch in
            fetch.metrics.attempts += 1
            if fetch.resume != nil { fetch.metrics.resumed += 1 }
            fetch.metrics.attemptBeganAt = nil
            fetch.metrics.headAt = nil
            fetch.metrics.endedAt = nil
            fetch.attempt = FetchAttempt(
                number: number, resume: fetch.resume,
                callerRange: fetch.request.headers.contains { $0.0.caseInsensitiveCompare("Range") == .orderedSame })
            // Resumed, the body so far stays (never fetched or decoded twice); else it starts over.
            if fetch.resume == nil { fetch.body = ByteBuffer() }
            fetch.tasks.transfer = transfer
        }
        if restarts { bodyObserver?(.abort(fetchID: id)) }
    }

    /// Whether attempt `number` is the fetch's current one (a late event of an earlier attempt is
    /// dropped).
    private func isCurrent(_ id: FetchID, _ number: Int) -> Bool {
        guard let fetch = fetches[id], fetch.attempt?.number == number else { return false }
        return fetch.machine.state == .running(attempt: number)
    }

    /// Whether the loader's head and bytes still go to attempt `number`: it is current and its
    /// transfer was not stopped (by the idle watchdog) meanwhile.
    private func isTransferring(_ id: FetchID, _ number: Int) -> Bool {
        isCurrent(id, number) && fetches[id]?.attempt?.isTransferring == true
    }

    private func attemptBegan(_ id: FetchID, _ number: Int) {
        guard isCurrent(id, number), !Task.isCancelled else { return }
        let now = clock()
        update(id) { fetch in
            fetch.metrics.attemptBeganAt = now
            fetch.attempt?.began(now: now)
            fetch.tasks.watchdog = Task { await self.watch(id, number) }
        }
    }

    private func headReceived(_ id: FetchID, _ number: Int, _ head: LoadedHead) throws {
        guard isTransferring(id, number) else { throw CancellationError() }
        let length = head.header("Content-Length").flatMap { Int64($0) ?? Int64($0.trimmingCharacters(in: .whitespaces)) }
        let retryAfter = head.header("Retry-After").flatMap { RetryPolicy.parseRetryAfter($0) }
        let now = clock()
        let maxBodyBytes = configuration.maxBodyBytes
        let taken = update(id) { fetch in
            fetch.metrics.headAt = now
            fetch.metrics.head = (head.httpVersion, head.connection, head.redirects, head.cache)
            return fetch.attempt?.headReceived(
                status: head.status, contentLength: length, contentRange: head.header("Content-Range"), retryAfterSeconds: retryAfter,
                maxBodyBytes: maxBodyBytes, now: now)
        }
        guard let taken, let taken else { throw CancellationError() }
        let continuing: Bool
        switch taken {
        case .failure(let failure):
            if fetches[id]?.resume != nil {
                // The server would not resume: the next attempt (if any) starts over.
                update(id) { fetch in
                    fetch.resume = nil
                    fetch.validator = nil
                }
            }
            throw failure
        case .success(let kind):
            continuing = kind == .continuing
        }
        let restarted = !continuing && fetches[id]?.body.readableBytes ?? 0 > 0
        let streams = update(id) { fetch -> Bool in
            if !continuing {
                // A whole body (again, if an attempt to resume got a 200): what came before goes.
                fetch.body = ByteBuffer()
                fetch.validator = ResumePoint.validator(headers: head.headers)
                fetch.expectedTotal = length
            }
            fetch.resume = nil
            return fetch.streamsBody
        } ?? false
        if restarted && streams { bodyObserver?(.abort(fetchID: id)) }
        let mime = head.header("Content-Type").map { value -> String in
            let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let plain = type.utf8.allSatisfy { (0x21...0x7E).contains($0) && !(0x41...0x5A).contains($0) }
            return plain ? String(type) : type.trimmingCharacters(in: .whitespaces).lowercased()
        }
        let info = ResponseInfo(
            status: head.status, expectedBytes: length, mimeType: mime?.isEmpty == false ? mime : nil,
            // (A fragment is never fetched, and tokens whose URLs differ only there share the fetch.)
            finalURL: String(head.finalURL.absoluteString.prefix { $0 != "#" }), httpVersion: head.httpVersion, cache: head.cache)
        let actions = update(id) { fetch in
            if !continuing, let length, length > 0, length <= 64 << 20 { fetch.body.reserveCapacity(Int(length)) }
            return fetch.machine.responseReceived(info, now: now, continuing: continuing)
        }
        perform(id, actions ?? [])
    }

    private func chunkReceived(_ id: FetchID, _ number: Int, _ chunk: ByteBuffer) throws {
        guard isTransferring(id, number) else { throw CancellationError() }
        let now = clock()
        let maxBodyBytes = configuration.maxBodyBytes
        let throttle = ProgressThrottle(configuration)
        guard let (offset, failure, streams) = update(id, { fetch in
            let offset = Int64(fetch.body.readableBytes)
            if fetch.metrics.head?.cache == CacheUse.none { fetch.metrics.wireBytes += Int64(chunk.readableBytes) }
            var copy = chunk
            fetch.body.writeBuffer(&copy)
            let failure = fetch.attempt?.bodyReceived(total: Int64(fetch.body.readableBytes), maxBodyBytes: maxBodyBytes, now: now)
            // A body longer than declared mixes two answers: no resuming from it.
            if fetch.attempt?.overran == true { fetch.validator = nil }
            return (offset, failure, fetch.streamsBody)
        }) else { throw CancellationError() }
        if streams, let fetch = fetches[id] {
            bodyObserver?(.chunk(fetchID: id, offset: offset, bytes: chunk, tokens: fetch.machine.tokens.map(\.token)))
        }
        if let failure { throw failure }
        let actions = update(id) { fetch in
            fetch.machine.bodyReceived(total: Int64(fetch.body.readableBytes), now: now, throttle: throttle)
        }
        perform(id, actions ?? [])
    }

    private func attemptEnded(_ id: FetchID, _ number: Int, _ error: (any Error)?) {
        guard isCurrent(id, number) else { return }
        let endedAt = clock()
        let ended = update(id) { fetch -> FetchAttempt.Outcome? in
            fetch.metrics.endedAt = endedAt
            fetch.tasks.watchdog?.cancel()
            fetch.tasks.transfer = nil
            return fetch.attempt?.loaderEnded(error: error)
        }
        guard let ended, var outcome = ended else { return }
        if case .succeeded = outcome, fetches[id]?.machine.response == nil {
            // A body is accepted only after a head, whose info the machine keeps: not expected.
            outcome = .failed(.network(.io, "the transfer ended without a response"))
        }
        let now = clock()
        switch outcome {
        case .failed(let failure):
            logger.debug("attempt failed", metadata: ["url": "\(fetches[id]?.url ?? "")", "attempt": "\(number)", "error": "\(failure)"])
            let policy = RetryPolicy(configuration)
            let jitter = Double.random(in: 0..<1)
            perform(
                id,
                update(id) { fetch in
                    // Part of the body came, and the response allows resuming: the next attempt asks
                    // for the rest. A server that would not resume gets one more whole attempt.
                    let received = Int64(fetch.body.readableBytes)
                    let refusedResume = fetch.attempt?.resume != nil && fetch.validator == nil
                    if failure.isTransient, received > 0, let validator = fetch.validator {
                        fetch.resume = ResumePoint(offset: received, validator: validator, total: fetch.expectedTotal)
                    } else {
                        fetch.resume = nil
                    }
                    return fetch.machine.attemptFailed(
                        failure, retryPolicy: policy, jitter: jitter, resumable: fetch.resume != nil || refusedResume)
                } ?? [])
        case .succeeded:
            if fetches[id]?.streamsBody == true { bodyObserver?(.end(fetchID: id)) }
            let actions = update(id) { fetch -> [FetchOperation.Action] in
                guard let response = fetch.machine.response else { return [] }
                fetch.resource = FetchedResource(response: response, body: fetch.body, fetchID: id, consumers: fetch.machine.tokens.count)
                fetch.body = ByteBuffer()
                return fetch.machine.attemptSucceeded(now: now)
            }
            perform(id, actions ?? [])
        }
    }

    func scheduleRetry(_ id: FetchID, attempt: Int, delayMs: Int64) {
        logger.info("retrying", metadata: ["url": "\(fetches[id]?.url ?? "")", "attempt": "\(attempt)", "delayMs": "\(delayMs)"])
        let timer = Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, delayMs)) * 1_000_000)
            if Task.isCancelled { return }
            self.retryFired(id)
        }
        update(id) { fetch in
            fetch.tasks.watchdog?.cancel()
            fetch.tasks.retry = timer
        }
    }

    private func retryFired(_ id: FetchID) {
        perform(id, update(id) { $0.machine.retryTimerFired() } ?? [])
    }

    /// The idle timeout: the attempt fails when no byte (or head) arrived for the request's
    /// timeout, or else the configured one (read each time, so `configure` applies at once).
    private func watch(_ id: FetchID, _ number: Int) async {
        while !Task.isCancelled, isCurrent(id, number) {
            let timeoutMs = fetches[id]?.timeoutMs ?? configuration.timeoutMs
            let now = clock()
            guard let action = update(id, { $0.attempt?.watchdogWoke(now: now, timeoutMs: timeoutMs) }), let action else { return }
            switch action {
            case .stopTransfer:
                fetches[id]?.tasks.transfer?.cancel()
                return
            case .checkAt(let deadline):
                try? await Task.sleep(nanoseconds: deadline - now)
            case .stop:
                return
            }
        }
    }
}
