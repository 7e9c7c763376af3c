import DequeModule
import HeapModule

/// The queue's lanes: a lane per priority for each host, and the heap of hosts that may start
/// something, keyed by their next operation (what `DownloadQueue`'s events start).
extension DownloadQueue {
    mutating func advance(_ reading: UInt64) {
        if reading > now { now = reading }
    }

    /// The host's next operation as a heap entry, if it has one.
    func candidate(_ name: String) -> Candidate? {
        guard let host = hosts[name], host.waitingCount > 0 else { return nil }
        for p in DownloadPriority.allCases.reversed() {
            let lane = host.lanes[p.rawValue]
            guard let item = order == .fifo ? lane.first : lane.last else { continue }
            let sequence = Int64(item.sequence)
            return Candidate(priority: p.rawValue, rank: order == .fifo ? -sequence : sequence, host: name)
        }
        return nil
    }

    /// Puts the host's current next operation in the ready heap (or the timed one) if the host
    /// may start it; older entries of the host go stale.
    mutating func offer(_ name: String) {
        guard let host = hosts[name], host.waitingCount > 0, host.runningCount < maxConcurrentPerHost, host.hold != .probing,
            let next = candidate(name)
        else { return }
        if notBefore(host) > now {
            timed.insert(Timed(at: notBefore(host), host: name))
        } else {
            ready.insert(next)
        }
        if ready.count + timed.count > 64 + 4 * (waiting.count + hosts.count) { rebuildReady() }
    }

    mutating func rebuildReady() {
        ready = Heap()
        timed = Heap()
        for name in hosts.keys {
            offer(name)
            forgetIfIdle(name)
        }
    }

    /// Forgets a host with nothing waiting or running, once its interval is over (until then it
    /// waits in the timed heap, to be looked at again).
    mutating func forgetIfIdle(_ name: String) {
        guard let host = hosts[name], host.waitingCount == 0, host.runningCount == 0 else { return }
        if notBefore(host) > now {
            timed.insert(Timed(at: notBefore(host), host: name))
        } else {
            hosts[name] = nil
        }
    }

    /// Puts a waiting entry in its host's lane for its priority, at its arrival's place.
    mutating func addToLane(_ id: ID, _ entry: Waiting) {
        var state = hosts.removeValue(forKey: entry.host) ?? Host()  // taken out so its lanes mutate in place
        state.lanes[entry.priority.rawValue].insertSorted((entry.sequence, id))
        state.waitingCount += 1
        hosts[entry.host] = state
    }

    mutating func removeFromLane(_ id: ID, _ entry: Waiting) {
        let lane = entry.priority.rawValue
        guard var state = hosts.removeValue(forKey: entry.host) else { preconditionFailure("queue lanes out of step") }
        let index = state.lanes[lane].sortedIndex(of: entry.sequence)
        precondition(index < state.lanes[lane].count && state.lanes[lane][index].id == id, "queue lanes out of step")
        state.lanes[lane].remove(at: index)
        state.waitingCount -= 1
        hosts[entry.host] = state
    }

    mutating func startAsMany() -> [ID] {
        var started: [ID] = []
        // Hosts whose interval has ended are ready again.
        while let first = timed.min, first.at <= now {
            timed.removeMin()
            offer(first.host)
            forgetIfIdle(first.host)
        }
        while !suspended, !deliveryFull, running.count - stalled.count < maxConcurrent, let next = popNext() {
            started.append(next)
        }
        return started
    }

    mutating func popNext() -> ID? {
        while let top = ready.popMax() {
            guard let current = hosts[top.host], current.runningCount < maxConcurrentPerHost, notBefore(current) <= now,
                current.hold != .probing, candidate(top.host) == top
            else { continue }  // stale
            var host = hosts.removeValue(forKey: top.host) ?? current  // taken out so its lanes mutate in place
            let item = order == .fifo ? host.lanes[top.priority].removeFirst() : host.lanes[top.priority].removeLast()
            host.waitingCount -= 1
            host.runningCount += 1
            host.lastStart = now
            if host.hold != nil { host.hold = .probing }  // the held host's one start
            hosts[top.host] = host
            running.insert(item.id)
            runningEntries[item.id] = waiting.removeValue(forKey: item.id)
            offer(top.host)
            return item.id
        }
        return nil
    }
}

extension Deque {
    /// Index of the first element whose sequence is not below `sequence` (elements sorted by it).
    func sortedIndex<T>(of sequence: UInt64) -> Int where Element == (sequence: UInt64, id: T) {
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].sequence < sequence { low = mid + 1 } else { high = mid }
        }
        return low
    }

    mutating func insertSorted<T>(_ element: (sequence: UInt64, id: T)) where Element == (sequence: UInt64, id: T) {
        insert(element, at: sortedIndex(of: element.sequence))
    }
}
