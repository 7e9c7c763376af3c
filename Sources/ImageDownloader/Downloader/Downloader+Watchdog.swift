/// The idle watchdog of every running attempt: their deadlines in `attemptDeadlines` (a value,
/// `AttemptDeadlines`), and one timer for the earliest of them, as `wakeQueueWhenDue` keeps one
/// for the queue (not a task, a timer and a cancellation per file). What a deadline means is the
/// fetch machine's to say (`FetchOperation.watchdogWoke`).
extension Downloader {
    /// Attempt `attempt` of fetch `id` began at `now`: it fails once nothing has arrived for
    /// its timeout (read again when the deadline comes, so that `configure` applies), and lends
    /// its running slot to other hosts if it is still without its head after a while.
    func watch(_ id: FetchID, _ attempt: Int, from now: UInt64, timeoutMs: Int64) {
        wakeWatchdog(at: attemptDeadlines.watch(id, attempt: attempt, from: now, timeoutMs: timeoutMs, lendAfterNs: Self.lendSlotAfterNs))
    }

    /// The attempt's head came: it keeps (or takes back) its running slot.
    func answered(_ id: FetchID) {
        attemptDeadlines.answered(id)
        queue.unstall(id)
    }

    /// The fetch's attempt ended (or the fetch did): no deadline. With none left, no timer.
    func unwatch(_ id: FetchID) {
        queue.unstall(id)
        guard !attemptDeadlines.unwatch(id) else { return }
        watchdog?.task.cancel()
        watchdog = nil
    }

    /// How long an attempt waits for its answer before it lends its running slot (a host that
    /// accepts connections and answers nothing would hold every slot for the idle timeout, and
    /// every other host's downloads would wait).
    static var lendSlotAfterNs: UInt64 { 2_000_000_000 }

    private func wakeWatchdog(at: UInt64) {
        if let current = watchdog, current.at <= at { return }
        watchdog?.task.cancel()
        watchdog = (at, timer(at: at) { $0.watchdogWoke() })
    }

    /// Each attempt whose deadline has come is asked again: stopped, or watched until a later one.
    private func watchdogWoke() {
        watchdog = nil
        let now = clock()
        let due = attemptDeadlines.due(now: now)
        for (id, attempt) in due.lend where fetches[id]?.machine.isTransferring(attempt) == true {
            logger.debug("no answer yet: the attempt lends its running slot", metadata: ["url": "\(fetches[id]?.url ?? "")"])
            startFetches(queue.stall(id, now: now))
        }
        for (id, attempt) in due.idle {
            guard let fetch = fetches[id] else { continue }
            switch fetch.machine.watchdogWoke(attempt, now: now, timeoutMs: fetch.timeoutMs ?? configuration.timeoutMs) {
            case .stopTransfer:
                fetch.running?.tasks.transfer?.cancel()
            case .checkAt(let deadline):
                attemptDeadlines.recheck(id, attempt: attempt, at: deadline)
            case .stop:
                break
            }
        }
        if let earliest = attemptDeadlines.earliest { wakeWatchdog(at: earliest) }
    }
}
