import Testing

@testable import ImageDownloader

/// The fetch's token list keeps one token inline and more in an array: every operation the
/// machine uses must behave as an array's would, across that boundary.
@Suite struct FetchTokensTests {
    private func tokens(_ list: FetchTokens) -> [DownloadToken] { list.map(\.token) }

    @Test func behavesAsAnArrayAcrossOneAndMany() {
        var list: FetchTokens = []
        #expect(list.isEmpty && list.count == 0)
        list.append((.string("a"), .normal))
        #expect(tokens(list) == [.string("a")] && list[0].priority == .normal)
        list[0].priority = .high
        #expect(list[0].priority == .high)
        list.append((.int(2), .low))
        list.append((.string("c"), .veryHigh))
        #expect(tokens(list) == [.string("a"), .int(2), .string("c")])
        #expect(list.map(\.priority) == [.high, .low, .veryHigh])
        list[1].priority = .veryLow
        #expect(list[1].priority == .veryLow && list.count == 3)
        #expect(list.firstIndex { $0.token == .string("c") } == 2)
        list.remove(at: 0)
        #expect(tokens(list) == [.int(2), .string("c")])
        list.removeAll { $0.token == .int(2) }
        #expect(tokens(list) == [.string("c")] && list[0].priority == .veryHigh)
        list.removeAll { _ in false }
        #expect(list.count == 1)
        list.remove(at: 0)
        #expect(list.isEmpty)
        list = FetchTokens([(.int(1), .normal), (.int(2), .normal)])
        list.removeAll()
        #expect(list.isEmpty)
        let fromOne = FetchTokens([(.int(9), .low)])
        #expect(tokens(fromOne) == [.int(9)])
    }

    /// A copy is a value: changing one list leaves the other as it was.
    @Test func copiesAreIndependent() {
        var first: FetchTokens = [(.int(1), .normal), (.int(2), .normal)]
        let second = first
        first[0].priority = .veryHigh
        first.append((.int(3), .low))
        #expect(second.count == 2 && second[0].priority == .normal)
        #expect(first.count == 3 && first[0].priority == .veryHigh)
    }
}
