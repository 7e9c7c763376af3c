import Foundation
import ImageDownloader
import Testing
import TestSupport

/// Bodies that break part-way, resumed with `Range` + `If-Range` from a loopback server that cuts
/// its responses at random points.
@Suite struct ResumeTests {
    static func fnv(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { fnv($0) } }

    /// Over raw bytes: a generic `Sequence` loop in a debug build held a pool thread for seconds.
    static func fnv(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        return Int(truncatingIfNeeded: hash)
    }

    func harness() async throws -> DownloaderHarness {
        try await DownloaderHarness.make {
            $0.maxRetries = 6
            $0.retryBaseDelayMs = 1
            $0.retryMaxDelayMs = 5
            $0.progressIntervalMs = 0
        }
    }

    /// Starts a download whose processor answers the body's hash.
    func start(_ h: DownloaderHarness, _ token: DownloadToken, _ url: String) async throws {
        try await h.downloader.reserve(token, url: url, priority: .normal)
        await h.downloader.start(DownloadRequest(token: token, url: url)) { resource, _ in
            resource.body.withUnsafeReadableBytes { ResumeTests.fnv($0) }
        }
    }

    func progress(_ h: DownloaderHarness, _ token: DownloadToken) -> [Int64] {
        h.events(token).compactMap { if case .progress(_, let received, _) = $0 { return received } else { return nil } }
    }

    @Test(arguments: 1...6)
    func randomDropsEndInTheSameBytes(seed: Int) async throws {
        let h = try await harness()
        defer { Task { await h.shutdown() } }
        var rng = SplitMix(seed: UInt64(seed))
        let body = rng.bytes(1_500_000 + seed * 77_777)
        h.server.setFile("big", body)
        let token = DownloadToken.int(Int64(seed))
        try await start(h, token, h.server.url("/files/big?ranges=1&drops=3&seed=\(seed)"))
        #expect(try await h.outcome(token).value == ResumeTests.fnv(body), "byte-identical")
        #expect(h.server.hits("/files/big") == 4, "three cuts, three resumes")
        let ranges = h.server.lastHeaders("/files/big").filter { $0.0.lowercased() == "range" || $0.0.lowercased() == "if-range" }
        #expect(ranges.count == 2, "the last request asked for the rest: \(ranges)")
        let seen = progress(h, token)
        #expect(seen == seen.sorted(), "progress never goes backwards")
        #expect(seen.last == Int64(body.count))
        let responses = h.events(token).filter { if case .response = $0 { return true } else { return false } }
        #expect(responses.count == 1)
    }

    @Test func aServerThatIgnoresTheRangeIsReadFromTheStartAgain() async throws {
        let h = try await harness()
        defer { Task { await h.shutdown() } }
        let body = (0..<900_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        h.server.setFile("whole", body)
        try await start(h, .string("w"), h.server.url("/files/whole?ranges=ignore&drops=2&seed=5"))
        #expect(try await h.outcome(.string("w")).value == ResumeTests.fnv(body))
        let seen = progress(h, .string("w"))
        #expect(seen == seen.sorted())
        #expect(seen.last == Int64(body.count))
    }

    @Test func aWrongContentRangeMakesTheNextAttemptStartOver() async throws {
        let h = try await harness()
        defer { Task { await h.shutdown() } }
        let body = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        h.server.setFile("bad", body)
        try await start(h, .string("b"), h.server.url("/files/bad?ranges=bad&drops=1&seed=9"))
        #expect(try await h.outcome(.string("b")).value == ResumeTests.fnv(body))
        // 1: cut; 2: resumed from the wrong offset, refused; 3: the whole body, no Range.
        #expect(h.server.hits("/files/bad") == 3)
        #expect(!h.server.lastHeaders("/files/bad").contains { $0.0.lowercased() == "range" })
    }

    @Test func withoutAcceptRangesAFailurePartWayIsNotRetried() async throws {
        let h = try await harness()
        defer { Task { await h.shutdown() } }
        h.server.setFile("plain", bytes(300_000))
        try await start(h, .string("p"), h.server.url("/files/plain?resetAfter=100000"))
        #expect(try await h.outcome(.string("p")).failure != nil)
        #expect(h.server.hits("/files/plain") == 1)
    }

    /// A 206 to a request that asked for no range is a part, not the resource: the download
    /// fails (after its retries), never saved as a success of the first bytes.
    @Test func a206ToAPlainRequestFails() async throws {
        let h = try await harness()
        defer { Task { await h.shutdown() } }
        h.server.setFile("part", Array(repeating: 7, count: 5_000))
        try await start(h, .string("p"), h.server.url("/files/part?partial206=1000"))
        let outcome = try await h.outcome(.string("p"))
        guard case .failure(let failure) = outcome else {
            Issue.record("a 206 without a Range was delivered: \(outcome)")
            return
        }
        #expect(failure.description.contains("206"))
    }
}
