import ImageDownloader
import TestSupport
import Testing

@testable import ImageWorkerServer

/// The delivery stage's admission, without I/O: concurrency, the memory budget, priorities,
/// cancellation and changed limits.
@Suite struct DecodeAdmissionTests {
    private func waiter(_ ticket: UInt64, _ token: String = "", _ priority: DownloadPriority = .normal, cost: Int = 1) -> DecodeAdmission.Waiter {
        .init(ticket: ticket, token: .string(token.isEmpty ? "t\(ticket)" : token), priority: priority, cost: cost)
    }

    @Test func atMostTheLimitRunAndTheNextWaiterFollowsARelease() {
        var a = DecodeAdmission(limit: 2, budget: 1_000)
        #expect(a.request(waiter(1)) == true)
        #expect(a.request(waiter(2)) == true)
        #expect(a.request(waiter(3)) == false)
        #expect(a.request(waiter(4)) == false)
        #expect(a.release(1) == [3])
        #expect(a.release(99) == [], "an unknown ticket frees nothing")
        #expect(a.release(2) == [4])
        #expect(a.running.count == 2 && a.waiting.isEmpty)
    }

    /// A result waiting to be handed over (a reader that does not take its shared files or read
    /// its stdout) keeps its bytes in the budget after its slot went on: decodes beyond the budget
    /// wait for it, even one that would run alone, and go on once it is handed over.
    @Test func resultsWaitingForTheirReaderStayInTheBudget() {
        var a = DecodeAdmission(limit: 2, budget: 100)
        #expect(a.request(waiter(1, cost: 60)) == true)
        a.hold(10, cost: 60)
        #expect(a.release(1) == [])
        #expect(a.running.isEmpty && a.bytesInFlight == 60)
        #expect(a.request(waiter(2, cost: 60)) == false, "60 + 60 is past the budget")
        #expect(a.request(waiter(3, cost: 500)) == false)
        a.hold(11, cost: 30)
        #expect(a.bytesInFlight == 90, "a hold counts whatever the budget: the bytes are there")
        #expect(a.release(10) == [2])
        #expect(a.release(11) == [])
        #expect(a.release(2) == [3], "alone at last: the large one runs")
        #expect(a.bytesInFlight == 500)
    }

    @Test func higherPrioritiesGoFirstThenFirstCome() {
        var a = DecodeAdmission(limit: 1, budget: 1_000)
        #expect(a.request(waiter(1)) == true)
        #expect(a.request(waiter(2, "low1", .low)) == false)
        #expect(a.request(waiter(3, "n", .normal)) == false)
        #expect(a.request(waiter(4, "low2", .low)) == false)
        #expect(a.request(waiter(5, "vh", .veryHigh)) == false)
        #expect(a.waiting.map(\.ticket) == [5, 3, 2, 4])
        // Raised while it waits: it moves behind the waiters already at that priority.
        #expect(a.setPriority(.string("low2"), .veryHigh) == [])
        #expect(a.waiting.map(\.ticket) == [5, 4, 3, 2])
        var order: [UInt64] = []
        var last: UInt64 = 1
        while true {
            let next = a.release(last)
            guard let ticket = next.first else { break }
            order.append(ticket)
            last = ticket
        }
        #expect(order == [5, 4, 3, 2])
    }

    @Test func theBudgetHoldsBackWhatWouldNotFitAndALargeImageRunsAlone() {
        var a = DecodeAdmission(limit: 4, budget: 100)
        #expect(a.request(waiter(1, cost: 60)) == true)
        #expect(a.request(waiter(2, cost: 50)) == false, "60 + 50 is over the budget")
        #expect(a.request(waiter(3, cost: 10)) == false, "not past the waiter at the head: it would starve")
        #expect(a.release(1) == [2, 3])
        #expect(a.bytesInFlight == 60)
        #expect(a.request(waiter(4, cost: 500)) == false, "larger than the budget: waits until nothing runs")
        #expect(a.release(2) == [])
        #expect(a.release(3) == [4])
        #expect(a.bytesInFlight == 500)
        #expect(a.request(waiter(5, cost: 1)) == false, "nothing joins an oversized decode")
        #expect(a.release(4) == [5])
    }

    @Test func progressiveDecodesHoldBudgetWithoutASlotAndNeverJumpTheQueue() {
        var a = DecodeAdmission(limit: 1, budget: 100)
        #expect(a.reserve(10, cost: 500) == true, "alone, larger than the budget: held")
        #expect(a.reserve(11, cost: 1) == false, "nothing joins an oversized one")
        #expect(a.request(waiter(1, cost: 10)) == false, "a whole decode waits for the memory too")
        #expect(a.release(10) == [1])
        #expect(a.reserve(12, cost: 80) == true, "held beside a running decode: no slot taken")
        #expect(a.bytesInFlight == 90)
        #expect(a.request(waiter(2, cost: 30)) == false)
        #expect(a.reserve(13, cost: 1) == false, "not ahead of a waiter")
        #expect(a.release(1) == [], "the held 80 and 30 are over the budget")
        #expect(a.release(12) == [2])
        #expect(a.held.isEmpty && a.bytesInFlight == 30)
    }

    @Test func aCancelledWaiterLeavesAndThoseBehindMayRun() {
        var a = DecodeAdmission(limit: 2, budget: 100)
        #expect(a.request(waiter(1, cost: 50)) == true)
        #expect(a.request(waiter(2, cost: 80)) == false)
        #expect(a.request(waiter(3, cost: 40)) == false)
        #expect(a.cancel(2) == [3])
        #expect(a.cancel(2) == [], "twice: nothing")
        #expect(a.waiting.isEmpty && a.running.count == 2)
    }

    @Test func raisedLimitsLetWaitersIn() {
        var a = DecodeAdmission(limit: 1, budget: 100)
        #expect(a.request(waiter(1)) == true)
        #expect(a.request(waiter(2)) == false)
        #expect(a.request(waiter(3)) == false)
        #expect(a.setLimits(limit: 3, budget: 100) == [2, 3])
        #expect(a.setLimits(limit: 0, budget: 0) == [])
        #expect(a.limit == 1 && a.budget == 1, "limits are at least 1")
    }

    /// Random operations against the rules: never over the limit, over the budget only alone,
    /// every admitted ticket admitted once, the head always the best waiter.
    @Test(arguments: Array(1...10) as [UInt64])
    func randomOperationsKeepTheRules(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        var a = DecodeAdmission(limit: 3, budget: 100)
        var admitted: Set<UInt64> = []
        var waiting: Set<UInt64> = []
        var next: UInt64 = 0
        func took(_ tickets: [UInt64]) {
            for t in tickets {
                #expect(admitted.insert(t).inserted)
                #expect(waiting.remove(t) != nil)
            }
        }
        for _ in 0..<400 {
            switch rng.next() % 5 {
            case 0, 1:
                next += 1
                let w = waiter(next, "k\(rng.next() % 6)", DownloadPriority(rawValue: Int(rng.next() % 5))!, cost: Int(rng.next() % 70))
                if a.request(w) { admitted.insert(next) } else { waiting.insert(next) }
            case 2:
                if let t = admitted.randomElement(using: &rng) {
                    admitted.remove(t)
                    took(a.release(t))
                }
            case 3:
                if let t = waiting.randomElement(using: &rng) {
                    took(a.cancel(t))
                    waiting.remove(t)
                }
            default:
                took(a.setPriority(.string("k\(rng.next() % 6)"), DownloadPriority(rawValue: Int(rng.next() % 5))!))
            }
            #expect(a.running.count <= 3)
            #expect(a.running.count <= 1 || a.bytesInFlight <= 100)
            #expect(Set(a.running.keys) == admitted)
            #expect(Set(a.waiting.map(\.ticket)) == waiting)
            let priorities = a.waiting.map(\.priority.rawValue)
            #expect(priorities == priorities.sorted(by: >), "waiters in priority order")
        }
    }
}

/// The gate around the admission: waiters wake in the admission's order, a cancelled waiter
/// gets no slot and leaves its place, a priority change moves a waiting token.
@Suite struct DecodeSlotsTests {
    final class Order: Sendable {
        let woken = LockedState<[String]>([])
    }

    /// Starts a task that takes a slot for `token`, records its turn, and holds the slot until
    /// released by the test; returns the task.
    private func waiter(
        _ slots: DecodeSlots, _ token: String, _ priority: DownloadPriority, order: Order, hold: PassGate
    ) -> Task<Bool, Never> {
        Task {
            guard let slot = await slots.acquire(token: .string(token), priority: priority, cost: 1) else { return false }
            order.woken.withLock { $0.append(token) }
            await hold.pass()
            slots.release(slot)
            return true
        }
    }

    @Test func waitersWakeByPriorityAndACancelledOneNeverRuns() async throws {
        let slots = DecodeSlots(limit: 1, memoryBytes: 1 << 20)
        let order = Order()
        let hold = PassGate()
        let first = waiter(slots, "first", .normal, order: order, hold: hold)
        try await waitUntil { order.woken.withLock { $0 } == ["first"] }
        let low = waiter(slots, "low", .low, order: order, hold: hold)
        try await waitUntil { slots.counts.waiting == 1 }
        let normal = waiter(slots, "normal", .normal, order: order, hold: hold)
        try await waitUntil { slots.counts.waiting == 2 }
        let doomed = waiter(slots, "doomed", .veryHigh, order: order, hold: hold)
        try await waitUntil { slots.counts.waiting == 3 }
        doomed.cancel()
        #expect(await doomed.value == false, "cancelled while waiting: no slot")
        #expect(slots.counts.waiting == 2)
        slots.setPriority(.string("low"), .high)  // now ahead of "normal"
        await hold.open(4)
        for task in [first, low, normal] { #expect(await task.value) }
        #expect(order.woken.withLock { $0 } == ["first", "low", "normal"])
        #expect(slots.counts.running == 0 && slots.counts.bytesInFlight == 0)
    }

    @Test func raisedConcurrencyWakesWaitersAtOnce() async throws {
        let slots = DecodeSlots(limit: 1, memoryBytes: 1 << 20)
        let order = Order()
        let hold = PassGate()
        let tasks = ["a", "b", "c"].map { waiter(slots, $0, .normal, order: order, hold: hold) }
        try await waitUntil { slots.counts.running == 1 && slots.counts.waiting == 2 }
        slots.setLimits(concurrency: 3, memoryBytes: 1 << 20)
        try await waitUntil { slots.counts.running == 3 }
        await hold.open(3)
        for task in tasks { #expect(await task.value) }
    }
}

/// Polls `condition` until it holds (throws after 20 s).
func waitUntil(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while !condition() {
        if ContinuousClock.now > deadline { throw CancellationError() }
        try await Task.sleep(for: .milliseconds(2))
    }
}
