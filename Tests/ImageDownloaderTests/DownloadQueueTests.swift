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

    /// A running operation that waits long for an answer lends its running slot, not its
    /// host's: another host's operation starts, its own host's do not; at most `maxConcurrent`
    /// lend at once; the answer takes the slot back (nothing new starts until fewer run).
    @Test func aStalledOperationLendsItsRunningSlotNotItsHosts() {
        var q = DownloadQueue<Int>(maxConcurrent: 2, maxConcurrentPerHost: 2)
        #expect(q.enqueue(1, priority: .normal, host: "mute") == [1])
        #expect(q.enqueue(2, priority: .normal, host: "mute") == [2])
        #expect(q.enqueue(3, priority: .normal, host: "mute") == [])
        for i in 10..<14 { #expect(q.enqueue(i, priority: .normal, host: "good") == []) }
        #expect(q.stall(1) == [10], "another host's download, not the mute host's third")
        #expect(q.stall(2) == [11])
        #expect(q.stall(10) == [], "no more than maxConcurrent lend at once")
        #expect(q.stall(1) == [], "once")
        #expect(q.runningCount == 4 && q.stalled == [1, 2])
        q.unstall(1)  // answered: counts again, 3 of 2 running
        #expect(q.remove(10) == [], "still one over the limit")
        #expect(q.remove(11) == [12])
        #expect(q.remove(2) == [], "a stalled one that ends frees nothing twice: it lent its slot already")
        #expect(q.remove(1) == [3], "the mute host's slot is free again; its URL came first")
        #expect(q.stalled.isEmpty)
    }

    /// An operation whose body is in gives its running slot back but counts in the delivery
    /// stage: nothing new starts while `maxFetches` are there, or `minFetches` holding `maxBytes`.
    @Test func aFullDeliveryStageHoldsNewStarts() {
        var q = DownloadQueue<Int>(maxConcurrent: 2)
        #expect(q.setDeliveryLimits(DeliveryStageLimits(maxFetches: 3, minFetches: 2, maxBytes: 100)) == [])
        for i in 1...6 { _ = q.enqueue(i, priority: .normal) }
        #expect(q.enterDelivery(1, bytes: 10) == [3], "the slot goes to the next")
        #expect(q.enterDelivery(2, bytes: 10) == [4], "two small bodies: room still")
        #expect(q.enterDelivery(3, bytes: 10) == [], "three: the stage is full, the slot stays free")
        #expect(q.runningCount == 1 && q.deliveringCount == 3 && q.nextWakeUp == nil)
        #expect(q.leaveDelivery(1) == [5], "room again: the free slot is taken")
        #expect(q.leaveDelivery(1) == [], "once")
        #expect(q.enterDelivery(4, bytes: 200) == [], "three: full")
        #expect(q.leaveDelivery(2) == [], "two, holding more than maxBytes: still full")
        #expect(q.leaveDelivery(3) == [6], "one, below minFetches: room whatever it holds")
        #expect(q.deliveringCount == 1)
        #expect(q.leaveDelivery(3) == [] && q.deliveringCount == 1, "3 has left; 4 is the one in the stage")
        #expect(q.leaveDelivery(4) == [] && q.deliveringCount == 0)
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

    /// A held host (down): its operations wait, taking no slot, other hosts' start; at the
    /// hold's end one starts (the probe) and the rest wait for `releaseHost`.
    @Test func aHeldHostStartsOneAtTheHoldsEndThenWaitsForRelease() {
        var q = DownloadQueue<Int>(maxConcurrent: 3, maxConcurrentPerHost: 3)
        #expect(q.enqueue(1, priority: .normal, host: "dead", now: 0) == [1])
        #expect(q.holdHost("dead", until: 100, now: 10) == [])
        #expect(q.isHeld("dead"))
        for i in 2...5 { #expect(q.enqueue(i, priority: .normal, host: "dead", now: 10) == []) }
        #expect(q.enqueue(10, priority: .low, host: "alive", now: 10) == [10], "another host takes the free slots")
        #expect(q.enqueue(11, priority: .low, host: "alive", now: 10) == [11])
        #expect(q.remove(1, now: 20) == [], "the held host's slot stays free of its own")
        #expect(q.nextWakeUp == 100)
        #expect(q.tick(now: 100) == [2], "one, at the hold's end")
        #expect(q.tick(now: 200) == [] && q.waitingCount == 3)
        #expect(q.remove(10, now: 210) == [], "a free slot, and still nothing of the held host")
        #expect(q.releaseHost("dead", now: 220) == [3], "released: as the limits allow (2, 3 and 11 run)")
        #expect(!q.isHeld("dead"))
        #expect(q.remove(2, now: 230) == [4])
    }

    @Test func holdingAgainMovesTheTimeAndAnIdleHeldHostIsForgottenAfterIt() {
        var q = DownloadQueue<Int>(maxConcurrent: 2)
        #expect(q.holdHost("h", until: 50, now: 0) == [])
        #expect(q.enqueue(1, priority: .high, host: "h", now: 10) == [], "a new one waits for the hold too")
        #expect(q.holdHost("h", until: 30, now: 20) == [])
        #expect(q.tick(now: 30) == [1])
        q.holdProbing("h")
        #expect(q.enqueue(2, priority: .high, host: "h", now: 40) == [])
        // The probe was lost: one more may start now.
        #expect(q.holdHost("h", until: 40, now: 40) == [2])
        #expect(q.remove(1, now: 50) == [] && q.remove(2, now: 50) == [])
        #expect(!q.isHeld("h"), "idle past its hold: forgotten")
        #expect(q.enqueue(3, priority: .normal, host: "h", now: 60) == [3])
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

    /// Gives a random waiting download a random priority, in the queue and in its model.
    static func reprioritise(_ q: inout DownloadQueue<Int>, _ model: inout NaiveQueue, _ rng: inout SplitMix) {
        guard let id = model.waiting.randomElement(using: &rng)?.id else { return }
        let p = DownloadPriority(rawValue: Int(rng.next() % 5))!
        q.setPriority(id, p)
        model.setPriority(id, p)
    }

    /// Against a naive model, over random operations: the same operations start, in the same order.
    @Test(arguments: [1, 2, 3, 7])
    func agreesWithANaiveModel(seed: UInt64) async {
        var rng = SplitMix(seed: seed)
        var q = DownloadQueue<Int>(maxConcurrent: 2)
        var model = NaiveQueue(limit: 2)
        var next = 0
        for step in 0..<2000 {
            await yieldThePool(step)
            switch rng.next() % 7 {
            case 0, 1, 2:
                let p = DownloadPriority(rawValue: Int(rng.next() % 5))!
                #expect(q.enqueue(next, priority: p) == model.enqueue(next, p))
                next += 1
            case 3:
                if let id = model.running.randomElement(using: &rng)?.id { #expect(q.remove(id) == model.remove(id)) }
            case 4:
                Self.reprioritise(&q, &model, &rng)
            case 5:
                if let id = model.waiting.randomElement(using: &rng)?.id { #expect(q.remove(id) == model.remove(id)) }
            default:
                let limit = Int(rng.next() % 4) + 1
                #expect(q.setMaxConcurrent(limit) == model.setLimit(limit))
            }
            #expect(q.waitingInStartOrder == model.startOrder)
        }
    }
    // MARK: Hosts

    @Test func aHostAtItsLimitDoesNotHoldBackOtherHosts() {
        var q = DownloadQueue<Int>(maxConcurrent: 4, maxConcurrentPerHost: 2)
        #expect(q.enqueue(1, priority: .normal, host: "slow") == [1])
        #expect(q.enqueue(2, priority: .normal, host: "slow") == [2])
        #expect(q.enqueue(3, priority: .veryHigh, host: "slow") == [], "its host is full, whatever its priority")
        #expect(q.enqueue(4, priority: .low, host: "fast") == [4])
        #expect(q.enqueue(5, priority: .low, host: "fast") == [5])
        #expect(q.enqueue(6, priority: .low, host: "fast") == [], "the overall limit")
        #expect(q.runningCount(host: "slow") == 2 && q.runningCount(host: "fast") == 2)
        #expect(q.remove(4) == [6], "its own host is still full: the slot goes to the other")
        #expect(q.remove(1) == [3])
        #expect(q.remove(5) == [], "nothing left that may start")
    }

    @Test func priorityOrderHoldsWithinAHost() {
        var q = DownloadQueue<Int>(maxConcurrent: 10, maxConcurrentPerHost: 1)
        _ = q.enqueue(0, priority: .normal, host: "a")
        _ = q.enqueue(1, priority: .low, host: "a")
        _ = q.enqueue(2, priority: .high, host: "a")
        _ = q.enqueue(3, priority: .normal, host: "a")
        #expect(q.remove(0) == [2])
        #expect(q.remove(2) == [3])
        #expect(q.remove(3) == [1])
    }

    @Test func raisingTheHostLimitStartsAtOnce() {
        var q = DownloadQueue<Int>(maxConcurrent: 10, maxConcurrentPerHost: 1)
        for i in 1...4 { _ = q.enqueue(i, priority: .normal, host: "a") }
        #expect(q.setHostLimits(maxConcurrent: 3, minStartIntervalNs: 0) == [2, 3])
        #expect(q.setHostLimits(maxConcurrent: 1, minStartIntervalNs: 0) == [])
        #expect(q.remove(1) == [] && q.remove(2) == [], "lowered: running ones finish first")
        #expect(q.remove(3) == [4])
    }

    @Test func startsForOneHostAreSpacedByTheInterval() {
        var q = DownloadQueue<Int>(maxConcurrent: 10, maxConcurrentPerHost: 10, minStartIntervalPerHostNs: 100)
        #expect(q.enqueue(1, priority: .normal, host: "a", now: 1000) == [1])
        #expect(q.enqueue(2, priority: .normal, host: "a", now: 1010) == [])
        #expect(q.enqueue(3, priority: .normal, host: "b", now: 1020) == [3], "another host is not spaced")
        #expect(q.nextWakeUp == 1100)
        #expect(q.tick(now: 1099) == [])
        #expect(q.tick(now: 1100) == [2])
        #expect(q.nextWakeUp == nil)
        _ = q.enqueue(4, priority: .normal, host: "a", now: 1150)
        #expect(q.nextWakeUp == 1200)
        #expect(q.setHostLimits(maxConcurrent: 10, minStartIntervalNs: 0, now: 1160) == [4], "lifting the spacing starts at once")
    }

    @Test func manyQueuedForOneFullHostCostLittleForTheOthers() async {
        // 20,000 waiting for one host: each start of another host is a heap operation, not a scan.
        var q = DownloadQueue<Int>(maxConcurrent: 8, maxConcurrentPerHost: 2)
        for i in 0..<20_000 {
            await yieldThePool(i)
            _ = q.enqueue(i, priority: .normal, host: "slow")
        }
        var started: [Int] = []
        for i in 20_000..<40_000 {
            await yieldThePool(i)
            started += q.enqueue(i, priority: .normal, host: "h\(i % 100)")
            for id in started where id >= 20_000 { started += q.remove(id) }
            started.removeAll { $0 >= 20_000 }
        }
        #expect(q.runningCount(host: "slow") == 2)
        #expect(q.waitingCount == 19_998)
    }

    /// Against a naive model with hosts, per-host limits, spacing and a clock, over random
    /// operations: the same operations start, in the same order.
    @Test(arguments: [11, 12, 13, 14, 15])
    func agreesWithANaiveModelOfHosts(seed: UInt64) async {
        var rng = SplitMix(seed: seed)
        var q = DownloadQueue<Int>(maxConcurrent: 3, maxConcurrentPerHost: 2, minStartIntervalPerHostNs: 0)
        var model = NaiveQueue(limit: 3, perHost: 2)
        var next = 0
        var now: UInt64 = 0
        for step in 0..<3000 {
            await yieldThePool(step)
            now += rng.next() % 20
            switch rng.next() % 12 {
            case 10:
                if let id = model.running.randomElement(using: &rng)?.id { #expect(q.park(id, now: now) == model.park(id, now: now)) }
            case 11:
                if let id = model.parked.randomElement(using: &rng)?.id {
                    let p = rng.next() % 2 == 0 ? nil : DownloadPriority(rawValue: Int(rng.next() % 5))!
                    #expect(q.unpark(id, priority: p, now: now) == model.unpark(id, p, now: now))
                } else if let id = model.waiting.randomElement(using: &rng)?.id {
                    #expect(q.unpark(id, now: now) == [], "only a parked operation comes back")
                }
            case 0, 1, 2:
                let p = DownloadPriority(rawValue: Int(rng.next() % 5))!
                let host = "h\(rng.next() % 4)"
                #expect(q.enqueue(next, priority: p, host: host, now: now) == model.enqueue(next, p, host: host, now: now))
                next += 1
            case 3, 4:
                if let id = model.running.randomElement(using: &rng)?.id { #expect(q.remove(id, now: now) == model.remove(id, now: now)) }
            case 5:
                Self.reprioritise(&q, &model, &rng)
            case 6:
                let leaving = model.waiting.map(\.id) + model.parked.map(\.id)
                if let id = leaving.randomElement(using: &rng) { #expect(q.remove(id, now: now) == model.remove(id, now: now)) }
            case 7:
                let perHost = Int(rng.next() % 3) + 1
                let interval = [0, 0, 15, 40][Int(rng.next() % 4)]
                #expect(
                    q.setHostLimits(maxConcurrent: perHost, minStartIntervalNs: UInt64(interval), now: now)
                        == model.setHostLimits(perHost, interval: UInt64(interval), now: now))
            case 8:
                let order: ExecutionOrder = rng.next() % 2 == 0 ? .fifo : .lifo
                q.setOrder(order)
                model.lifo = order == .lifo
                #expect(q.tick(now: now) == model.fill(now: now))
            default:
                if let wake = q.nextWakeUp { now = max(now, wake) }
                #expect(q.tick(now: now) == model.fill(now: now))
            }
            #expect(q.waitingInStartOrder == model.startOrder)
            #expect(q.parkedCount == model.parked.count && q.runningCount == model.running.count)
        }
    }

    /// A parked operation (a fetch waiting to retry) lends its running slot to other hosts but
    /// keeps its host's, and comes back where its first arrival puts it: under FIFO ahead of what
    /// arrived after it.
    @Test func aParkedOperationLendsItsRunningSlotKeepsItsHostsAndComesBackInItsPlace() {
        var q = DownloadQueue<Int>(maxConcurrent: 1, maxConcurrentPerHost: 1)
        #expect(q.enqueue(1, priority: .normal, host: "dead") == [1])
        #expect(q.enqueue(2, priority: .normal, host: "dead") == [])
        #expect(q.enqueue(3, priority: .normal, host: "live") == [])
        #expect(q.park(1) == [3], "another host's operation runs; its own host gets no more")
        #expect(q.isParked(1) && q.contains(1) && !q.isWaiting(1))
        #expect(q.runningCount == 1 && q.parkedCount == 1 && q.waitingCount == 1)
        #expect(q.runningCount(host: "dead") == 1)
        #expect(q.unpark(1) == [], "the running slot is taken")
        #expect(q.enqueue(4, priority: .normal, host: "live") == [])
        #expect(q.waitingInStartOrder == [1, 2, 4], "it arrived first")
        #expect(q.remove(3) == [1])
        #expect(q.park(1) == [4])
        #expect(q.park(1) == [], "parking twice does nothing")
        #expect(q.remove(1) == [], "its host's slot is free, the running one is not")
        #expect(!q.contains(1) && q.parkedCount == 0)
        #expect(q.remove(4) == [2])
        #expect(q.unpark(1) == [], "gone")
    }

    @Test func removingAParkedOperationFreesItsHostsSlot() {
        var q = DownloadQueue<Int>(maxConcurrent: 2, maxConcurrentPerHost: 1)
        #expect(q.enqueue(1, priority: .normal, host: "a") == [1])
        #expect(q.enqueue(2, priority: .normal, host: "a") == [])
        #expect(q.park(1) == [], "its host is still at its limit")
        #expect(q.remove(1) == [2])
        #expect(q.runningCount(host: "a") == 1)
    }

    @Test func aParkedOperationComesBackAtItsNewPriorityAndBehindNewerOnesUnderLIFO() {
        var q = DownloadQueue<Int>(maxConcurrent: 1, order: .lifo)
        #expect(q.enqueue(1, priority: .normal) == [1])
        _ = q.enqueue(2, priority: .normal)
        #expect(q.park(1) == [2])
        _ = q.enqueue(3, priority: .normal)
        #expect(q.unpark(1) == [])
        #expect(q.waitingInStartOrder == [3, 1], "LIFO: the newer one first")
        #expect(q.remove(2) == [3])
        #expect(q.park(3) == [1])
        q.setPriority(3, .high)
        #expect(q.priority(of: 3) == .high)
        _ = q.enqueue(4, priority: .normal)
        #expect(q.unpark(3) == [])
        #expect(q.waitingInStartOrder == [3, 4], "its priority changed while parked")
        #expect(q.park(1) == [3])
        #expect(q.unpark(1, priority: .veryHigh) == [])
        #expect(q.waitingInStartOrder == [1, 4])
        #expect(q.priority(of: 1) == .veryHigh)
    }

    /// Coming back from parking is a start like any other: spaced by its host's interval.
    @Test func anUnparkedOperationStartsNoSoonerThanItsHostsInterval() {
        var q = DownloadQueue<Int>(maxConcurrent: 2, minStartIntervalPerHostNs: 100)
        #expect(q.enqueue(1, priority: .normal, host: "h", now: 0) == [1])
        #expect(q.park(1, now: 10) == [])
        #expect(q.unpark(1, now: 50) == [], "started at 0: not before 100")
        #expect(q.nextWakeUp == 100)
        #expect(q.tick(now: 100) == [1])
    }

    @Test func removeAllTakesParkedOperationsToo() {
        var q = DownloadQueue<Int>(maxConcurrent: 1)
        _ = q.enqueue(1, priority: .normal)
        _ = q.enqueue(2, priority: .normal)
        _ = q.enqueue(3, priority: .normal)
        #expect(q.park(1) == [2])
        #expect(Set(q.removeAll()) == [1, 2, 3])
        #expect(!q.contains(1) && q.parkedCount == 0 && q.runningCount == 0 && q.waitingCount == 0)
    }
}

struct NaiveQueue {
    var limit: Int
    var perHost = Int.max
    var interval: UInt64 = 0
    var lifo = false
    var running: [(id: Int, host: String)] = []
    var waiting: [(id: Int, p: DownloadPriority, seq: Int, host: String)] = []
    /// Running operations' priority and arrival, kept for `park`.
    var started: [Int: (p: DownloadPriority, seq: Int)] = [:]
    /// Operations that gave their running slot back and keep their host's.
    var parked: [(id: Int, p: DownloadPriority, seq: Int, host: String)] = []
    var lastStart: [String: UInt64] = [:]
    var seq = 0

    var startOrder: [Int] { sorted(waiting).map(\.id) }

    func sorted(_ items: [(id: Int, p: DownloadPriority, seq: Int, host: String)]) -> [(id: Int, p: DownloadPriority, seq: Int, host: String)] {
        items.sorted { $0.p != $1.p ? $0.p > $1.p : (lifo ? $0.seq > $1.seq : $0.seq < $1.seq) }
    }

    mutating func fill(now: UInt64 = 0) -> [Int] {
        var started: [Int] = []
        while running.count < limit, let first = sorted(waiting).first(where: { item in
            running.count { $0.host == item.host } + parked.count { $0.host == item.host } < perHost
                && (interval == 0 || lastStart[item.host].map { now >= $0 + interval } ?? true)
        }) {
            waiting.removeAll { $0.id == first.id }
            running.append((first.id, first.host))
            self.started[first.id] = (first.p, first.seq)
            lastStart[first.host] = now
            started.append(first.id)
        }
        return started
    }

    mutating func enqueue(_ id: Int, _ p: DownloadPriority, host: String = "", now: UInt64 = 0) -> [Int] {
        waiting.append((id, p, seq, host))
        seq += 1
        return fill(now: now)
    }

    mutating func remove(_ id: Int, now: UInt64 = 0) -> [Int] {
        if waiting.contains(where: { $0.id == id }) {
            waiting.removeAll { $0.id == id }
            return []
        }
        parked.removeAll { $0.id == id }
        running.removeAll { $0.id == id }
        return fill(now: now)
    }

    mutating func park(_ id: Int, now: UInt64) -> [Int] {
        guard let i = running.firstIndex(where: { $0.id == id }), let entry = started[id] else { return [] }
        parked.append((id, entry.p, entry.seq, running[i].host))
        running.remove(at: i)
        return fill(now: now)
    }

    mutating func unpark(_ id: Int, _ p: DownloadPriority?, now: UInt64) -> [Int] {
        guard let i = parked.firstIndex(where: { $0.id == id }) else { return [] }
        var entry = parked.remove(at: i)
        if let p { entry.p = p }
        waiting.append(entry)
        return fill(now: now)
    }

    mutating func setPriority(_ id: Int, _ p: DownloadPriority) {
        if let i = waiting.firstIndex(where: { $0.id == id }) { waiting[i].p = p }
        if let i = parked.firstIndex(where: { $0.id == id }) { parked[i].p = p }
    }

    mutating func setLimit(_ n: Int) -> [Int] {
        limit = n
        return fill()
    }

    mutating func setHostLimits(_ n: Int, interval: UInt64, now: UInt64) -> [Int] {
        perHost = n
        self.interval = interval
        return fill(now: now)
    }
}
