import Foundation
import Logging

/// What callers do to live tokens and to the queue after the requests: cancel, reprioritise,
/// configure, hold for a slow reader, drain, and read the status.
extension Downloader {
    /// Cancels one token. Idempotent: returns whether the token was live.
    @discardableResult
    public func cancel(_ token: DownloadToken) -> Bool {
        guard let record = tokens[token] else { return false }
        switch record.place {
        case .reserved:
            _ = tokens.cancelReserved(token)
        case .attached(let id):
            perform(id, fetches[id]?.machine.cancel(token))
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
        for token in tokens.reserved { add(token) }
        for id in queue.waitingInStartOrder.reversed() {
            for entry in fetches[id]?.machine.tokens ?? [] { add(entry.token) }
        }
        for token in tokens.tokens { add(token) }
        var count = 0
        for token in order where cancel(token) { count += 1 }
        return count
    }

    @discardableResult
    public func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) -> Bool {
        guard let record = tokens[token] else { return false }
        tokens.setPriority(token, priority)
        if case .attached(let id) = record.place {
            if let changed = fetches[id]?.machine.setPriority(token, priority) { queue.setPriority(id, changed) }
        }
        return true
    }

    public func configure(_ newValue: DownloaderConfiguration) {
        configuration = newValue
        if newValue.hostDownAfter <= 0 { forgetHostsDown() }  // the rule turned off: nothing waits for it
        queue.setOrder(newValue.executionOrder)
        startFetches(
            queue.setHostLimits(
                maxConcurrent: newValue.maxConcurrentPerHost, minStartIntervalNs: newValue.minStartIntervalPerHostNs, now: clock()))
        startFetches(queue.setMaxConcurrent(newValue.maxConcurrentDownloads, now: clock()))
        startFetches(queue.setDeliveryLimits(newValue.deliveryLimits, now: clock()))
        startFetches(queue.setSuspended(queueHeld, now: clock()))
    }

    /// While held, no fetch starts (running ones go on): the worker holds the queue while its
    /// reader has fallen behind, so that output, and the memory behind it, stays bounded.
    /// Independent of the configured `suspended`.
    public func setHeld(_ value: Bool) {
        guard value != held else { return }
        held = value
        logger.debug(value ? "holding the queue: output is backed up" : "output caught up: the queue goes on")
        startFetches(queue.setSuspended(queueHeld, now: clock()))
    }

    /// Lifts `suspended` so that everything accepted can finish (stdin's end with `drain`,
    /// `shutdown`): a suspended queue would otherwise never end its waiting tokens.
    public func resumeToDrain() {
        guard configuration.suspended else { return }
        logger.info("resuming the suspended queue to finish what was accepted")
        configuration.suspended = false
        startFetches(queue.setSuspended(queueHeld, now: clock()))
    }

    /// Whether no fetch may start now: suspended by configuration, or held for a slow reader
    /// (a full delivery stage holds the queue too: `DownloadQueue+Delivery.swift`).
    var queueHeld: Bool { configuration.suspended || held }

    /// Forgets the failed-URL list and which hosts are down (`clearFailedURLs`).
    public func clearFailedURLs() {
        failedURLs.removeAll()
        forgetHostsDown()
    }

    /// Forgets which hosts are down; their waiting downloads go on.
    func forgetHostsDown() {
        let down = hostHealth.downHosts
        hostHealth.removeAll()
        for host in down { startFetches(queue.releaseHost(host, now: clock())) }
    }

    public var liveTokenCount: Int { tokens.count }

    public func status() -> Status {
        var live: [Status.LiveToken] = []
        for (token, record) in tokens.records {
            var state = Status.LiveToken.State.reserved
            var received: Int64 = 0
            var expected: Int64? = nil
            if case .attached(let id) = record.place, let fetch = fetches[id] {
                state = .init(fetch.machine.state)
                received = fetch.machine.receivedBytes
                expected = fetch.machine.response?.expectedBytes
            }
            live.append(.init(token: token, url: record.url, priority: record.priority, state: state, receivedBytes: received, expectedBytes: expected))
        }
        live.sort { $0.token.description < $1.token.description }
        let queuedTokens = live.count { $0.state.isWaiting }
        let deliveringTokens = live.count { $0.state == .delivering }
        return Status(
            queuedFetches: queue.waitingCount, runningFetches: queue.runningCount + queue.parkedCount, deliveringFetches: queue.deliveringCount,
            queuedTokens: queuedTokens, runningTokens: live.count - queuedTokens - deliveringTokens, deliveringTokens: deliveringTokens,
            succeeded: tokens.succeeded, failed: tokens.failed,
            cancelled: tokens.cancelled, blockedURLs: failedURLs.count, hostsDown: hostHealth.downHosts, liveTokens: live, configuration: configuration, totals: totals)
    }

    /// How long nothing has moved, in nanoseconds: no response head, no body bytes, no attempt
    /// or token ended, no fetch started; 0 while a token is being decoded or written (work that
    /// sends nothing for a while), or when no token is live.
    public var quietForNs: UInt64 {
        guard !tokens.isEmpty, queue.deliveringCount == 0, processing.isEmpty else { return 0 }
        let now = clock()
        return now > lastActivity ? now - lastActivity : 0
    }

    /// Returns once no token is live.
    public func waitUntilIdle() async {
        if tokens.isEmpty { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }
}
