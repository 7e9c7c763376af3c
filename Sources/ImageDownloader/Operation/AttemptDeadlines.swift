/// The running attempts' deadlines, as a value: when each attempt's idle timeout is next looked
/// at, and when one still without its response head lends its running slot. The downloader keeps
/// one timer, for `earliest`; when it fires, `due` says which attempts to ask their fetch machine
/// about (`FetchOperation.watchdogWoke`, `isTransferring`), and `recheck` watches one again at
/// the later deadline the machine gives. Tested without I/O (`AttemptDeadlinesTests`).
struct AttemptDeadlines<ID: Hashable & Sendable>: Sendable {
    struct Entry: Sendable, Equatable {
        var attempt: Int
        var at: UInt64
    }

    private var idle: [ID: Entry] = [:]
    private var head: [ID: Entry] = [:]

    /// Whether no attempt is watched.
    var isEmpty: Bool { idle.isEmpty && head.isEmpty }

    /// The earliest deadline, when any.
    var earliest: UInt64? {
        let idleAt = idle.values.lazy.map(\.at).min()
        let headAt = head.values.lazy.map(\.at).min()
        switch (idleAt, headAt) {
        case (let a?, let b?): return min(a, b)
        case (let a?, nil): return a
        case (nil, let b): return b
        }
    }

    /// Attempt `attempt` of `id` began at `now`: its idle deadline is `timeoutMs` on, and it lends
    /// its running slot after `lendAfterNs` (or half its timeout, if that is sooner) without a
    /// head. Returns when the timer should fire for it.
    mutating func watch(_ id: ID, attempt: Int, from now: UInt64, timeoutMs: Int64, lendAfterNs: UInt64) -> UInt64 {
        let timeoutNs = UInt64(max(1, timeoutMs)) * 1_000_000
        let at = now &+ timeoutNs
        let lendAt = now &+ min(lendAfterNs, timeoutNs / 2)
        idle[id] = Entry(attempt: attempt, at: at)
        head[id] = Entry(attempt: attempt, at: lendAt)
        return min(at, lendAt)
    }

    /// The attempt's head came: it lends no slot.
    mutating func answered(_ id: ID) {
        head[id] = nil
    }

    /// The fetch's attempt ended (or the fetch did): no deadline. Returns whether any is left.
    @discardableResult
    mutating func unwatch(_ id: ID) -> Bool {
        head[id] = nil
        idle[id] = nil
        return !isEmpty
    }

    /// What has come due at `now`, taken out: the attempts to lend their slot (still without a
    /// head), and those whose idle deadline has come (ask the machine; `recheck` keeps one).
    mutating func due(now: UInt64) -> (lend: [(ID, Int)], idle: [(ID, Int)]) {
        var lend: [(ID, Int)] = []
        var idleDue: [(ID, Int)] = []
        for (id, entry) in head where entry.at <= now {
            head[id] = nil
            lend.append((id, entry.attempt))
        }
        for (id, entry) in idle where entry.at <= now {
            idle[id] = nil
            idleDue.append((id, entry.attempt))
        }
        return (lend, idleDue)
    }

    /// The machine looked and the attempt has had data since: watched again until `at`.
    mutating func recheck(_ id: ID, attempt: Int, at: UInt64) {
        idle[id] = Entry(attempt: attempt, at: at)
    }
}
