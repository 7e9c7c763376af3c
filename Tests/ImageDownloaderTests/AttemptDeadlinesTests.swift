import Testing

@testable import ImageDownloader

/// The running attempts' deadlines, without I/O: when the one timer fires, what has come due.
struct AttemptDeadlinesTests {
    @Test func anAttemptWithoutItsHeadLendsItsSlotThenTimesOut() {
        var d = AttemptDeadlines<Int>()
        let fire = d.watch(1, attempt: 1, from: 0, timeoutMs: 15_000, lendAfterNs: 2_000_000_000)
        #expect(fire == 2_000_000_000 && d.earliest == 2_000_000_000, "the slot is lent first")
        let early = d.due(now: 1_000_000_000)
        #expect(early.lend.isEmpty && early.idle.isEmpty)
        let lend = d.due(now: 2_000_000_000)
        #expect(lend.lend.map(\.0) == [1] && lend.idle.isEmpty)
        #expect(d.earliest == 15_000_000_000)
        let idle = d.due(now: 15_000_000_000)
        #expect(idle.idle.map(\.0) == [1] && idle.idle.map(\.1) == [1])
        #expect(d.isEmpty && d.earliest == nil)
    }

    @Test func aShortTimeoutLendsAtHalfOfItAndAnAnswerLendsNothing() {
        var d = AttemptDeadlines<Int>()
        #expect(d.watch(7, attempt: 3, from: 100, timeoutMs: 1_000, lendAfterNs: 2_000_000_000) == 100 + 500_000_000)
        d.answered(7)
        #expect(d.earliest == 100 + 1_000_000_000, "only the idle deadline is left")
        #expect(d.due(now: 100 + 1_000_000_000).lend.isEmpty)
    }

    @Test func aRecheckWatchesAgainAndUnwatchingTheLastLeavesNothing() {
        var d = AttemptDeadlines<Int>()
        _ = d.watch(1, attempt: 1, from: 0, timeoutMs: 10, lendAfterNs: 1)
        _ = d.watch(2, attempt: 5, from: 0, timeoutMs: 20, lendAfterNs: 1)
        let due = d.due(now: 10_000_000)
        #expect(due.lend.count == 2 && due.idle.map(\.0) == [1])
        d.recheck(1, attempt: 1, at: 30_000_000)  // data came since: looked at again later
        #expect(d.earliest == 20_000_000)
        let left = d.unwatch(2)
        #expect(left, "attempt 1 is still watched")
        #expect(d.earliest == 30_000_000)
        let none = d.unwatch(1)
        #expect(!none && d.isEmpty)
    }
}
