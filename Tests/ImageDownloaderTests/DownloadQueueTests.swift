import ImageDownloader
import Testing
import TestSupport

@Suite struct DownloadQueueTests {
    @Test func startsUpToTheLimitThenOneForEachThatLeaves() {
        var q = DownloadQueue<Int>(maxConcurrent: 2)
        #expect(q.enqueue(1, priority: .normal) == [1])
        #expect(q.enqueue(2, priority: .normal) == [2])
        #expect(q.enqueue(3, priority: .normal) == [])
        #expect(q.enqueue(4, priority: .normal) == [])
        #expect(q.remove(1) == [3])
        #expect(q.runningCount == 2 && q.waitingCount == 1)
    }

    @Test func higherPriorityStartsFirstThenArrivalOrder() {
        var q = DownloadQueue<Int>(maxConcurrent: 1)
        _ = q.enqueue(0, priority: .normal)  // running
        _ = q.enqueue(1, priority: .low)
        _ = q.enqueue(2, priority: .normal)
        _ = q.enqueue(3, priority: .veryHigh)
        _ = q.enqueue(4, priority: .normal)
        #expect(q.waitingInStartOrder == [3, 2, 4, 1])
        #expect(q.remove(0) == [3])
        #expect(q.remove(3) == [2])
        #expect(q.remove(2) == [4])
        #expect(q.remove(4) == [1])
    }

    @Test func lifoStartsTheNewestOfEqualPriorityFirst() {
        var q = DownloadQueue<Int>(maxConcurrent: 1, order: .lifo)
        _ = q.enqueue(0, priority: .normal)
        for i in 1...3 { _ = q.enqueue(i, priority: .normal) }
        _ = q.enqueue(9, priority: .high)
        #expect(q.waitingInStartOrder == [9, 3, 2, 1])
        q.setOrder(.fifo)
        #expect(q.waitingInStartOrder == [9, 1, 2, 3])
    }

    @Test func changingPriorityKeepsArrivalOrderWithinTheNewLane() {
        var q = DownloadQueue<Int>(maxConcurrent: 1)
        _ = q.enqueue(0, priority: .normal)
        for i in 1...4 { _ = q.enqueue(i, priority: i % 2 == 0 ? .high : .low) }  // 1 low, 2 high, 3 low, 4 high
        q.setPriority(3, .high)
        #expect(q.waitingInStartOrder == [2, 3, 4, 1])
        q.setPriority(2, .veryLow)
        #expect(q.waitingInStartOrder == [3, 4, 1, 2])
        #expect(q.priority(of: 2) == .veryLow)
        q.setPriority(0, .veryHigh)  // running: nothing to reorder
        #expect(q.priority(of: 0) == nil)
    }

    @Test func suspensionHoldsStartsUntilResumed() {
        var q = DownloadQueue<Int>(maxConcurrent: 3, suspended: true)
        #expect(q.enqueue(1, priority: .normal) == [])
        #expect(q.enqueue(2, priority: .normal) == [])
        #expect(q.setSuspended(false) == [1, 2])
        #expect(q.setSuspended(true) == [])
        #expect(q.enqueue(3, priority: .normal) == [])
        #expect(q.runningCount == 2, "suspension does not stop what runs")
    }

    @Test func raisingTheLimitStartsAtOnceAndLoweringLetsRunningFinish() {
        var q = DownloadQueue<Int>(maxConcurrent: 1)
        for i in 1...5 { _ = q.enqueue(i, priority: .normal) }
        #expect(q.setMaxConcurrent(3) == [2, 3])
        #expect(q.setMaxConcurrent(1) == [])
        #expect(q.remove(1) == [])
        #expect(q.remove(2) == [])
        #expect(q.remove(3) == [4])
    }

    @Test func removingAWaitingOperationStartsNothing() {
        var q = DownloadQueue<Int>(maxConcurrent: 1)
        _ = q.enqueue(1, priority: .normal)
        _ = q.enqueue(2, priority: .normal)
        #expect(q.remove(2) == [])
        #expect(!q.contains(2))
        #expect(q.remove(2) == [], "removing twice is harmless")
        #expect(q.remove(1) == [])
    }

    @Test func removeAllEmptiesTheQueue() {
        var q = DownloadQueue<Int>(maxConcurrent: 1)
        for i in 1...3 { _ = q.enqueue(i, priority: .normal) }
        #expect(Set(q.removeAll()) == [1, 2, 3])
        #expect(q.runningCount == 0 && q.waitingCount == 0)
    }

    /// Against a naive model, over random operations: the same operations start, in the same order.
    @Test(arguments: [1, 2, 3, 7])
    func agreesWithANaiveModel(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        var q = DownloadQueue<Int>(maxConcurrent: 2)
        var model = NaiveQueue(limit: 2)
        var next = 0
        for _ in 0..<2000 {
            switch rng.next() % 7 {
            case 0, 1, 2:
                let p = DownloadPriority(rawValue: Int(rng.next() % 5))!
                #expect(q.enqueue(next, priority: p) == model.enqueue(next, p))
                next += 1
            case 3:
                if let id = model.running.randomElement(using: &rng) { #expect(q.remove(id) == model.remove(id)) }
            case 4:
                if let id = model.waiting.randomElement(using: &rng)?.id {
                    let p = DownloadPriority(rawValue: Int(rng.next() % 5))!
                    q.setPriority(id, p)
                    model.setPriority(id, p)
                }
            case 5:
                if let id = model.waiting.randomElement(using: &rng)?.id { #expect(q.remove(id) == model.remove(id)) }
            default:
                let limit = Int(rng.next() % 4) + 1
                #expect(q.setMaxConcurrent(limit) == model.setLimit(limit))
            }
            #expect(q.waitingInStartOrder == model.startOrder)
        }
    }
}

struct NaiveQueue {
    var limit: Int
    var running: [Int] = []
    var waiting: [(id: Int, p: DownloadPriority, seq: Int)] = []
    var seq = 0

    var startOrder: [Int] {
        waiting.sorted { $0.p != $1.p ? $0.p > $1.p : $0.seq < $1.seq }.map(\.id)
    }

    mutating func fill() -> [Int] {
        var started: [Int] = []
        while running.count < limit, let first = startOrder.first {
            waiting.removeAll { $0.id == first }
            running.append(first)
            started.append(first)
        }
        return started
    }

    mutating func enqueue(_ id: Int, _ p: DownloadPriority) -> [Int] {
        waiting.append((id, p, seq))
        seq += 1
        return fill()
    }

    mutating func remove(_ id: Int) -> [Int] {
        if waiting.contains(where: { $0.id == id }) {
            waiting.removeAll { $0.id == id }
            return []
        }
        running.removeAll { $0 == id }
        return fill()
    }

    mutating func setPriority(_ id: Int, _ p: DownloadPriority) {
        if let i = waiting.firstIndex(where: { $0.id == id }) { waiting[i].p = p }
    }

    mutating func setLimit(_ n: Int) -> [Int] {
        limit = n
        return fill()
    }
}
