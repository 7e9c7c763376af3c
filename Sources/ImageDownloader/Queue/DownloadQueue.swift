import DequeModule
import HeapModule

/// The operation queue, as a value: which operations wait, which run, and which start next.
///
/// Every method takes an event and returns the operations to start now, so the queue can be
/// tested without I/O. At most `maxConcurrent` run at once, and at most `maxConcurrentPerHost` of
/// one host (an operation's `host` key, given when it is enqueued); with `minStartIntervalPerHostNs`
/// set, two starts for one host are at least that far apart (clock readings come with each event).
/// Among the operations that may start, the highest priority starts first, and among equal
/// priorities the oldest (FIFO) or the newest (LIFO). An operation that waits for its host never
/// holds back another host's: the queue keeps a lane per priority for each host and a heap of the
/// hosts that may start something, keyed by their next operation. While suspended nothing starts.
/// Changing a limit, the order or suspension applies at once.
///
/// A running operation may give its slot back for a while and keep its place (`park`, as a fetch
/// does while it waits to retry): its host's slot stays taken, so a failing host is sent no more
/// than before, but other hosts may use the running slot. `unpark` puts it among the waiting
/// again, where its first arrival puts it (ahead of later arrivals of its priority under FIFO,
/// behind them under LIFO).
///
/// A host can be held (`holdHost`, for a host that is down: `HostHealth`): its operations wait,
/// taking no slot, until a given time; then one starts (the probe) and the host is held again
/// until `releaseHost`.
public struct DownloadQueue<ID: Hashable & Sendable>: Sendable {
    public private(set) var maxConcurrent: Int
    public private(set) var maxConcurrentPerHost: Int
    /// Nanoseconds between two starts for one host; 0: no spacing.
    public private(set) var minStartIntervalPerHostNs: UInt64
    public private(set) var order: ExecutionOrder
    public private(set) var suspended: Bool
    /// When the delivery stage is full (`DownloadQueue+Delivery.swift`); unbounded by default.
    public internal(set) var deliveryLimits = DeliveryStageLimits.none
    /// The operations in the delivery stage, with their bodies' sizes, and those sizes' sum.
    var delivering: [ID: Int64] = [:]
    var deliveringBytes: Int64 = 0
    public internal(set) var running: Set<ID> = []
    /// Running operations that lend their running slot: an attempt that has waited long for its
    /// answer (a host that accepts connections and says nothing) does not hold every other
    /// host's downloads in the queue. At most `maxConcurrent` lend at once; each keeps its
    /// host's slot, so a silent host starts no more than its own limit.
    public internal(set) var stalled: Set<ID> = []

    struct Waiting: Sendable {
        var priority: DownloadPriority
        var sequence: UInt64
        var host: String
    }

    /// One host's waiting operations (per priority, sorted by arrival) and what it runs.
    struct Host: Sendable {
        var lanes: [Deque<(sequence: UInt64, id: ID)>] = Array(repeating: [], count: DownloadPriority.allCases.count)
        var waitingCount = 0
        var runningCount = 0
        /// When this host last started an operation.
        var lastStart: UInt64?
        /// Held: nothing starts before `until`, then one operation (`holdHost`); `probing`: that
        /// one started, nothing more until `releaseHost`.
        var hold: Hold?
    }

    enum Hold: Sendable, Equatable {
        case until(UInt64)
        case probing
    }

    /// When `host` may start its next operation: its last start plus the interval, and not
    /// before the end of a hold.
    func notBefore(_ host: Host) -> UInt64 {
        var at: UInt64 = 0
        if minStartIntervalPerHostNs > 0, let last = host.lastStart { at = last &+ minStartIntervalPerHostNs }
        if case .until(let until) = host.hold { at = max(at, until) }
        return at
    }

    /// A host that may start its next operation (`key`), in the ready heap. Entries go stale when
    /// the host's next operation or state changes; a stale entry is dropped when it surfaces.
    struct Candidate: Comparable, Sendable {
        var priority: Int
        /// Larger starts first: the negated sequence for FIFO, the sequence for LIFO.
        var rank: Int64
        var host: String

        static func < (a: Candidate, b: Candidate) -> Bool {
            a.priority != b.priority ? a.priority < b.priority : a.rank < b.rank
        }
        static func == (a: Candidate, b: Candidate) -> Bool {
            a.priority == b.priority && a.rank == b.rank && a.host == b.host
        }
    }

    /// A host waiting for its interval, by the time it may start again.
    struct Timed: Comparable, Sendable {
        var at: UInt64
        var host: String
        static func < (a: Timed, b: Timed) -> Bool { a.at < b.at }
    }

    var hosts: [String: Host] = [:]
    var waiting: [ID: Waiting] = [:]
    /// The running operations' entries (kept for `park`).
    var runningEntries: [ID: Waiting] = [:]
    /// Operations that gave their slot back for a while, with their place.
    var parked: [ID: Waiting] = [:]
    var ready = Heap<Candidate>()
    var timed = Heap<Timed>()
    var nextSequence: UInt64 = 0
    /// The latest clock reading an event brought.
    var now: UInt64 = 0

    public init(
        maxConcurrent: Int = 6, maxConcurrentPerHost: Int = .max, minStartIntervalPerHostNs: UInt64 = 0,
        order: ExecutionOrder = .fifo, suspended: Bool = false
    ) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.maxConcurrentPerHost = max(1, maxConcurrentPerHost)
        self.minStartIntervalPerHostNs = minStartIntervalPerHostNs
        self.order = order
        self.suspended = suspended
    }

    public var waitingCount: Int { waiting.count }
    public var runningCount: Int { running.count }
    public var parkedCount: Int { parked.count }

    public func contains(_ id: ID) -> Bool { waiting[id] != nil || running.contains(id) || parked[id] != nil }
    public func isWaiting(_ id: ID) -> Bool { waiting[id] != nil }
    public func isParked(_ id: ID) -> Bool { parked[id] != nil }
    public func priority(of id: ID) -> DownloadPriority? { waiting[id]?.priority ?? parked[id]?.priority }
    /// Operations of `host` running now, or parked (keeping its slot).
    public func runningCount(host: String) -> Int { hosts[host]?.runningCount ?? 0 }

    /// When the queue should be woken (`tick`) because a host's interval ends and it has an
    /// operation waiting that could then start; nil when nothing waits on time.
    public var nextWakeUp: UInt64? {
        guard !suspended, !deliveryFull, running.count - stalled.count < maxConcurrent else { return nil }
        return timed.min?.at
    }

    /// Adds an operation for `host`; returns what starts now (possibly that operation).
    public mutating func enqueue(_ id: ID, priority: DownloadPriority, host: String = "", now: UInt64 = 0) -> [ID] {
        precondition(!contains(id), "operation enqueued twice")
        advance(now)
        // The host's key as already stored: its waiting entries share one copy of the text.
        let host = hosts.index(forKey: host).map { hosts.keys[$0] } ?? host
        let entry = Waiting(priority: priority, sequence: nextSequence, host: host)
        nextSequence += 1
        waiting[id] = entry
        var state = hosts.removeValue(forKey: host) ?? Host()  // taken out so its lanes mutate in place
        state.lanes[priority.rawValue].append((entry.sequence, id))
        state.waitingCount += 1
        hosts[host] = state
        offer(host)
        return startAsMany()
    }

    /// Moves a waiting operation to another priority, keeping its place in arrival order; a
    /// parked one comes back at it. A running operation has nothing to reorder.
    public mutating func setPriority(_ id: ID, _ priority: DownloadPriority) {
        if parked[id] != nil {
            parked[id]?.priority = priority
            return
        }
        guard var entry = waiting[id], entry.priority != priority else { return }
        removeFromLane(id, entry)
        entry.priority = priority
        waiting[id] = entry
        addToLane(id, entry)
        offer(entry.host)
    }

    /// An operation left: cancelled while waiting or parked, or finished/cancelled while running.
    /// Returns what starts in the slot it freed.
    public mutating func remove(_ id: ID, now: UInt64 = 0) -> [ID] {
        advance(now)
        if let entry = parked.removeValue(forKey: id) {
            hosts[entry.host]?.runningCount -= 1  // the host's slot it kept
            offer(entry.host)
            forgetIfIdle(entry.host)
            return startAsMany()
        }
        if let entry = waiting.removeValue(forKey: id) {
            removeFromLane(id, entry)
            offer(entry.host)
            forgetIfIdle(entry.host)
            return []
        }
        guard running.remove(id) != nil, let host = runningEntries.removeValue(forKey: id)?.host else { return [] }
        stalled.remove(id)
        hosts[host]?.runningCount -= 1
        offer(host)
        forgetIfIdle(host)
        return startAsMany()
    }

    /// A running operation gives its running slot back, keeping its host's, and stays in the
    /// queue with its priority and place, started by nothing until `unpark`. Returns what starts
    /// in the slot (another host's operation).
    public mutating func park(_ id: ID, now: UInt64 = 0) -> [ID] {
        advance(now)
        guard let entry = runningEntries.removeValue(forKey: id) else { return [] }
        running.remove(id)
        stalled.remove(id)
        parked[id] = entry
        return startAsMany()
    }

    /// A running operation has waited long for an answer: its running slot goes to another
    /// operation (its host's slot stays taken), unless `maxConcurrent` already lend theirs.
    /// Returns what starts in it.
    public mutating func stall(_ id: ID, now: UInt64 = 0) -> [ID] {
        advance(now)
        guard running.contains(id), stalled.count < maxConcurrent, stalled.insert(id).inserted else { return [] }
        return startAsMany()
    }

    /// The stalled operation is answered (or its attempt ended): it counts as running again
    /// (for a moment more may run than `maxConcurrent`; nothing new starts until they are fewer).
    public mutating func unstall(_ id: ID) {
        stalled.remove(id)
    }

    /// A parked operation waits again, at `priority` (nil: the one it had) and where its first
    /// arrival puts it. Returns what starts now (possibly that operation).
    public mutating func unpark(_ id: ID, priority: DownloadPriority? = nil, now: UInt64 = 0) -> [ID] {
        advance(now)
        guard var entry = parked.removeValue(forKey: id) else { return [] }
        if let priority { entry.priority = priority }
        waiting[id] = entry
        hosts[entry.host]?.runningCount -= 1  // the host's slot it kept, taken again when it starts
        addToLane(id, entry)
        offer(entry.host)
        return startAsMany()
    }

    public mutating func setMaxConcurrent(_ limit: Int, now: UInt64 = 0) -> [ID] {
        advance(now)
        maxConcurrent = max(1, limit)
        return startAsMany()
    }

    /// The per-host limits: how many run at once, and the spacing of starts (0: none).
    public mutating func setHostLimits(maxConcurrent limit: Int, minStartIntervalNs: UInt64, now: UInt64 = 0) -> [ID] {
        advance(now)
        let changed = limit != maxConcurrentPerHost || minStartIntervalNs != minStartIntervalPerHostNs
        maxConcurrentPerHost = max(1, limit)
        minStartIntervalPerHostNs = minStartIntervalNs
        if changed { rebuildReady() }
        return startAsMany()
    }

    public mutating func setSuspended(_ value: Bool, now: UInt64 = 0) -> [ID] {
        advance(now)
        suspended = value
        return startAsMany()
    }

    public mutating func setOrder(_ value: ExecutionOrder) {
        guard value != order else { return }
        order = value
        rebuildReady()
    }

    /// Holds `host`: its operations wait (taking no slot) until `until`; then one starts and the
    /// host is held until `releaseHost`. Holding again moves the time (`until` at or before now:
    /// one may start now).
    public mutating func holdHost(_ host: String, until: UInt64, now: UInt64 = 0) -> [ID] {
        advance(now)
        var state = hosts.removeValue(forKey: host) ?? Host()
        state.hold = .until(until)
        hosts[host] = state
        offer(host)
        forgetIfIdle(host)
        return startAsMany()
    }

    /// Keeps `host` from starting anything until `releaseHost` (its probe runs).
    public mutating func holdProbing(_ host: String) {
        hosts[host]?.hold = .probing
    }

    /// Ends a hold: the host's operations start as its limits allow.
    public mutating func releaseHost(_ host: String, now: UInt64 = 0) -> [ID] {
        advance(now)
        guard hosts[host]?.hold != nil else { return [] }
        hosts[host]?.hold = nil
        offer(host)
        forgetIfIdle(host)
        return startAsMany()
    }

    /// Whether `host` is held (either way).
    public func isHeld(_ host: String) -> Bool { hosts[host]?.hold != nil }

    /// The clock moved on: hosts whose interval ended may start again.
    public mutating func tick(now: UInt64) -> [ID] {
        advance(now)
        return startAsMany()
    }

    /// Everything, waiting first then running, then parked, for cancel-all. Leaves the queue empty.
    public mutating func removeAll() -> [ID] {
        var all = waitingInStartOrder
        all.append(contentsOf: running)
        all.append(contentsOf: parked.keys)
        hosts = [:]
        waiting = [:]
        runningEntries = [:]
        parked = [:]
        running = []
        stalled = []
        ready = Heap()
        timed = Heap()
        return all
    }

    /// Waiting operations in the order they would start were no host limited.
    public var waitingInStartOrder: [ID] {
        waiting.sorted { a, b in
            a.value.priority != b.value.priority
                ? a.value.priority > b.value.priority
                : (order == .fifo ? a.value.sequence < b.value.sequence : a.value.sequence > b.value.sequence)
        }.map(\.key)
    }
}
