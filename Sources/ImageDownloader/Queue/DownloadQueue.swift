/// The operation queue, as a value: which operations wait, which run, and which start next.
///
/// Every method takes an event and returns the operations to start now, so the queue can be
/// tested without I/O. At most `maxConcurrent` run at once; among those waiting, the highest
/// priority starts first, and among equal priorities the oldest (FIFO) or the newest (LIFO).
/// While suspended nothing starts. Changing the limit, the order or suspension applies at once.
public struct DownloadQueue<ID: Hashable & Sendable>: Sendable {
    public private(set) var maxConcurrent: Int
    public private(set) var order: ExecutionOrder
    public private(set) var suspended: Bool
    public private(set) var running: Set<ID> = []

    private struct Waiting: Sendable {
        var priority: DownloadPriority
        var sequence: UInt64
    }

    /// Per priority, waiting IDs sorted by arrival.
    private var lanes: [[(sequence: UInt64, id: ID)]] = Array(repeating: [], count: DownloadPriority.allCases.count)
    private var waiting: [ID: Waiting] = [:]
    private var nextSequence: UInt64 = 0

    public init(maxConcurrent: Int = 6, order: ExecutionOrder = .fifo, suspended: Bool = false) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.order = order
        self.suspended = suspended
    }

    public var waitingCount: Int { waiting.count }
    public var runningCount: Int { running.count }

    public func contains(_ id: ID) -> Bool { waiting[id] != nil || running.contains(id) }
    public func isWaiting(_ id: ID) -> Bool { waiting[id] != nil }
    public func priority(of id: ID) -> DownloadPriority? { waiting[id]?.priority }

    /// Adds an operation; returns what starts now (possibly that operation).
    public mutating func enqueue(_ id: ID, priority: DownloadPriority) -> [ID] {
        precondition(!contains(id), "operation enqueued twice")
        let entry = Waiting(priority: priority, sequence: nextSequence)
        nextSequence += 1
        waiting[id] = entry
        lanes[priority.rawValue].append((entry.sequence, id))
        return startAsMany()
    }

    /// Moves a waiting operation to another priority, keeping its place in arrival order.
    /// A running operation has nothing to reorder.
    public mutating func setPriority(_ id: ID, _ priority: DownloadPriority) {
        guard var entry = waiting[id], entry.priority != priority else { return }
        removeFromLane(id, entry)
        entry.priority = priority
        waiting[id] = entry
        let lane = lanes[priority.rawValue]
        var low = 0
        var high = lane.count
        while low < high {
            let mid = (low + high) / 2
            if lane[mid].sequence < entry.sequence { low = mid + 1 } else { high = mid }
        }
        lanes[priority.rawValue].insert((entry.sequence, id), at: low)
    }

    /// An operation left: cancelled while waiting, or finished/cancelled while running.
    /// Returns what starts in the slot it freed.
    public mutating func remove(_ id: ID) -> [ID] {
        if let entry = waiting.removeValue(forKey: id) {
            removeFromLane(id, entry)
            return []
        }
        guard running.remove(id) != nil else { return [] }
        return startAsMany()
    }

    public mutating func setMaxConcurrent(_ limit: Int) -> [ID] {
        maxConcurrent = max(1, limit)
        return startAsMany()
    }

    public mutating func setSuspended(_ value: Bool) -> [ID] {
        suspended = value
        return startAsMany()
    }

    public mutating func setOrder(_ value: ExecutionOrder) {
        order = value
    }

    /// Everything, waiting first then running, for cancel-all. Leaves the queue empty.
    public mutating func removeAll() -> [ID] {
        var all: [ID] = []
        for lane in lanes.reversed() { all.append(contentsOf: lane.map(\.id)) }
        all.append(contentsOf: running)
        lanes = Array(repeating: [], count: DownloadPriority.allCases.count)
        waiting = [:]
        running = []
        return all
    }

    /// Waiting operations in the order they would start.
    public var waitingInStartOrder: [ID] {
        var result: [ID] = []
        for lane in lanes.reversed() {
            result.append(contentsOf: order == .fifo ? lane.map(\.id) : lane.reversed().map(\.id))
        }
        return result
    }

    private mutating func removeFromLane(_ id: ID, _ entry: Waiting) {
        let lane = lanes[entry.priority.rawValue]
        var low = 0
        var high = lane.count
        while low < high {
            let mid = (low + high) / 2
            if lane[mid].sequence < entry.sequence { low = mid + 1 } else { high = mid }
        }
        precondition(low < lane.count && lane[low].id == id, "queue lanes out of step")
        lanes[entry.priority.rawValue].remove(at: low)
    }

    private mutating func startAsMany() -> [ID] {
        var started: [ID] = []
        while !suspended, running.count < maxConcurrent, let next = popNext() {
            running.insert(next)
            started.append(next)
        }
        return started
    }

    private mutating func popNext() -> ID? {
        for p in DownloadPriority.allCases.reversed() where !lanes[p.rawValue].isEmpty {
            let item = order == .fifo ? lanes[p.rawValue].removeFirst() : lanes[p.rawValue].removeLast()
            waiting[item.id] = nil
            return item.id
        }
        return nil
    }
}
