/// The idle watchdog of every running attempt: each attempt's deadline in `watched`, and one
/// timer for the earliest of them, as `wakeQueueWhenDue` keeps one for the queue (not a task, a
/// timer and a cancellation per file). What a deadline means is the fetch
/// machine's to say (`FetchOperation.watchdogWoke`).
extension Downloader {
    /// Attempt `attempt` of fetch `id` began at `now`: it fails once nothing has arrived for
    /// its timeout (read again when the deadline comes, so that `configure` applies).
    func watch(_ id: FetchID, _ attempt: Int, from now: UInt64, timeoutMs: Int64) {
        let at = now &+ UInt64(max(1, timeoutMs)) * 1_000_000
        watched[id] = (attempt, at)
        // An attempt still without its head this long lends its running slot to other hosts.
        let lendAt = now &+ min(Self.lendSlotAfterNs, UInt64(max(1, timeoutMs)) * 500_000)
        awaitingHead[id] = (attempt, lendAt)
        wakeWatchdog(at: min(at, lendAt))
    }

    /// The attempt's head came: it keeps (or takes back) its running slot.
    func answered(_ id: FetchID) {
        awaitingHead[id] = nil
        queue.unstall(id)
    }

    /// The fetch's attempt ended (or the fetch did): no deadline. With none left, no timer.
    func unwatch(_ id: FetchID) {
        answered(id)
        guard watched.removeValue(forKey: id) != nil, watched.isEmpty else { return }
        watchdog?.task.cancel()
        watchdog = nil
    }

    /// How long an attempt waits for its answer before it lends its running slot (a host that
    /// accepts connections and answers nothing held every slot for the idle timeout, 15 s, and
    /// every other host's downloads waited).
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
        var earliest: UInt64? = nil
        var lending: [FetchID] = []
        for (id, entry) in awaitingHead {
            if entry.at <= now {
                awaitingHead[id] = nil
                if fetches[id]?.machine.isTransferring(entry.attempt) == true { lending.append(id) }
            } else {
                earliest = min(earliest ?? entry.at, entry.at)
            }
        }
        for id in lending {
            logger.debug("no answer yet: the attempt lends its running slot", metadata: ["url": "\(fetches[id]?.url ?? "")"])
            startFetches(queue.stall(id, now: now))
        }
        for (id, entry) in watched {
            var at = entry.at
            if at <= now {
                guard let fetch = fetches[id] else {
                    watched[id] = nil
                    continue
                }
                switch fetch.machine.watchdogWoke(entry.attempt, now: now, timeoutMs: fetch.timeoutMs ?? configuration.timeoutMs) {
                case .stopTransfer:
                    watched[id] = nil
                    fetch.running?.tasks.transfer?.cancel()
                    continue
                case .checkAt(let deadline):
                    at = deadline
                    watched[id] = (entry.attempt, deadline)
                case .stop:
                    watched[id] = nil
                    continue
                }
            }
            earliest = min(earliest ?? at, at)
        }
        if let earliest { wakeWatchdog(at: earliest) }
    }
}
