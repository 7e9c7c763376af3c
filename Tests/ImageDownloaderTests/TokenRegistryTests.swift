@testable import ImageDownloader
import Testing

@Suite struct TokenRegistryTests {
    @Test func aTokenIsLiveFromReserveToItsOneEnding() {
        var registry = TokenRegistry<Int, Never, Int>()
        let r1 = registry.reserve(.string("a"), url: "http://x/a", priority: .normal)
        #expect(r1)
        let r2 = registry.reserve(.string("a"), url: "http://x/b", priority: .high)
        #expect(!r2, "a live token cannot be taken again")
        #expect(registry.reserved == [.string("a")])
        registry.attach(.string("a"), to: 7, processor: { _, _ in 1 }, now: 0)
        #expect(registry[.string("a")]?.place == .attached(7) && registry.reserved.isEmpty)
        registry.setPriority(.string("a"), .veryHigh)
        #expect(registry[.string("a")]?.priority == .veryHigh)
        let r3 = registry.finish(.string("a"), DownloadOutcome<Int, Never>.success(1))
        #expect(r3)
        let r4 = registry.finish(.string("a"), DownloadOutcome<Int, Never>.cancelled)
        #expect(!r4, "ends once")
        #expect(registry.isEmpty && registry.succeeded == 1 && registry.cancelled == 0)
        let r5 = registry.reserve(.string("a"), url: "http://x/a", priority: .normal)
        #expect(r5, "free again once ended")
    }

    @Test func cancellingAReservedTokenMarksIt() {
        var registry = TokenRegistry<Int, Never, Int>()
        _ = registry.reserve(.int(1), url: "u", priority: .low)
        let r6 = registry.cancelReserved(.int(1))
        #expect(r6)
        #expect(registry[.int(1)]?.place == .reserved(cancelled: true))
        registry.attach(.int(1), to: 3, processor: { _, _ in 0 }, now: 0)
        let r7 = registry.cancelReserved(.int(1))
        #expect(!r7, "an attached token is cancelled through its fetch")
        let r8 = registry.finish(.int(1), DownloadOutcome<Int, Never>.failure(.notModified))
        #expect(r8 && registry.failed == 1)
    }

    /// Records live in slots that ended tokens free for the next: whatever the order of reserves
    /// and ends, each live token reads back its own record, and a copy of the registry is a value.
    @Test func slotsAreReusedWithoutMixingRecords() {
        var registry = TokenRegistry<Int, Never, Int>()
        var live: [Int: String] = [:]
        var generator = SystemRandomNumberGenerator()
        var next = 0
        for round in 0..<2_000 {
            if live.isEmpty || Int.random(in: 0..<3, using: &generator) > 0 {
                let url = "http://x/\(next)"
                let reserved = registry.reserve(.int(Int64(next)), url: url, priority: .normal)
                #expect(reserved)
                if next % 2 == 0 { registry.attach(.int(Int64(next)), to: next, processor: { _, _ in 0 }, now: UInt64(round)) }
                live[next] = url
                next += 1
            } else {
                let token = live.keys.randomElement(using: &generator)!
                let ended = registry.finish(.int(Int64(token)), DownloadOutcome<Int, Never>.cancelled)
                #expect(ended)
                live[token] = nil
            }
        }
        #expect(registry.count == live.count)
        for (token, url) in live {
            let record = registry[.int(Int64(token))]
            #expect(record?.url == url)
            #expect(record?.place == (token % 2 == 0 ? .attached(token) : .reserved(cancelled: false)))
        }
        #expect(Set(registry.records.map(\.token)) == Set(live.keys.map { DownloadToken.int(Int64($0)) }))
        let copy = registry
        for token in live.keys { _ = registry.finish(.int(Int64(token)), DownloadOutcome<Int, Never>.success(1)) }
        #expect(registry.isEmpty && registry[.int(0)] == nil)
        #expect(copy.count == live.count, "the copy kept its tokens")
        let again = registry.reserve(.int(0), url: "again", priority: .low)
        #expect(again && registry[.int(0)]?.url == "again")
    }
}
