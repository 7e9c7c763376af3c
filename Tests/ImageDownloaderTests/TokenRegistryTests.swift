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
}
