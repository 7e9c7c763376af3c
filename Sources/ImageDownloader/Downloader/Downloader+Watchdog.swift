/// The idle watchdog of every running attempt: each attempt's deadline in `watched`, and one
/// timer for the earliest of them, as `wakeQueueWhenDue` keeps one for the queue. (A task that
/// slept per attempt, then was cancelled when the body came, was 4% of the plumbing job's
/// profile: a task, a timer and a cancellation per file.) What a deadline means is the fetch
/// machine's to say (`FetchOperation.watchdogWoke`).
extension Downloader {
    /// Attempt `attempt` of fetch `id` began at `now`: it fails once nothing has arrived for
    /// its timeout (read again when the deadline comes, so that `configure` applies).
    func watch(_ id: FetchID, _ attempt: Int, from now: UInt64, timeoutMs: Int64) {
        let at = now &+ UInt64(max(1, timeoutMs)) * 1_000_000
        watched[id] = (attempt, at)
        wakeWatchdog(at: at)
    }

    /// The fetch's attempt ended (or the fetch did): no deadline. With none left, no timer.
    func unwatch(_ id: FetchID) {
        guard watched.removeValue(forKey: id) != nil, watched.isEmpty else { return }
        watchdog?.task.cancel()
        watchdog = nil
    }

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
