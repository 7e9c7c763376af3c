import Foundation
import ImageDownloader
import Testing
import TestSupport

/// Per-host limits with real fetches: two loopback servers are two hosts (their ports differ).
@Suite struct HostLimitTests {
    @Test func aSlowHostDoesNotHoldBackAFastOne() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 6
            $0.maxConcurrentPerHost = 2
            // The server holds the slow ones on purpose: no idle timeout (and retry, a third
            // request) however long a loaded machine takes to get through the fast ones.
            $0.timeoutMs = 600_000
        }
        defer { Task { await h.shutdown() } }
        let fast = try await TestHTTPServer.start()
        defer { Task { await fast.shutdown() } }
        h.server.setFile("slow", bytes(1000))
        fast.setFile("quick", bytes(3000))
        // Twenty downloads of the slow host first, each held by the server, then forty of the
        // fast one queued behind them, at a lower priority.
        for i in 0..<20 { try await h.start(.string("slow\(i)"), h.server.url("/files/slow?gate=slow&n=\(i)"), priority: .high) }
        for i in 0..<40 { try await h.start(.string("fast\(i)"), fast.url("/files/quick?n=\(i)"), priority: .low) }
        for i in 0..<40 { #expect(try await h.outcome(.string("fast\(i)")).value == 3000) }
        let status = await h.downloader.status()
        #expect(status.runningFetches == 2 && status.queuedFetches == 18, "the slow host never had more than its limit")
        try await h.until("both slow requests arrived") { h.server.hits("/files/slow") == 2 }

        // Raised at run time: two more of the slow host start at once.
        var configuration = await h.downloader.configuration
        configuration.maxConcurrentPerHost = 4
        await h.downloader.configure(configuration)
        try await h.until("two more slow ones started") { h.server.hits("/files/slow") == 4 }
        h.server.openGate("slow")
        for i in 0..<20 { #expect(try await h.outcome(.string("slow\(i)")).value == 1000) }
    }

    @Test func priorityOrderHoldsWithinAHost() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 6
            $0.maxConcurrentPerHost = 1
        }
        defer { Task { await h.shutdown() } }
        h.server.setFile("x", bytes(100))
        try await h.start(.string("first"), h.server.url("/files/x?gate=g&n=0"))
        try await h.until("first running") { h.server.hits("/files/x") == 1 }
        try await h.start(.string("low"), h.server.url("/files/x?n=1"), priority: .low)
        try await h.start(.string("high"), h.server.url("/files/x?n=2"), priority: .high)
        try await h.start(.string("normal"), h.server.url("/files/x?n=3"))
        h.server.openGate("g")
        for name in ["first", "low", "high", "normal"] { try await h.outcome(.string(name)) }
        let order = h.events.compactMap { event -> String? in
            if case .started(.string(let t), _) = event { return t } else { return nil }
        }
        #expect(order == ["first", "high", "normal", "low"])
    }

    @Test func startsForOneHostAreSpacedByTheRateLimit() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 6
            $0.maxRequestsPerSecondPerHost = 20
            $0.suspended = true  // everything queued first, so the start order depends on no timing
        }
        defer { Task { await h.shutdown() } }
        let other = try await TestHTTPServer.start()
        defer { Task { await other.shutdown() } }
        h.server.setFile("r", bytes(100))
        other.setFile("o", bytes(100))
        for i in 0..<5 { try await h.start(.int(Int64(i)), h.server.url("/files/r?n=\(i)")) }
        try await h.start(.string("other"), other.url("/files/o"))
        var configuration = await h.downloader.configuration
        configuration.suspended = false
        let began = ContinuousClock.now
        await h.downloader.configure(configuration)
        for i in 0..<5 { #expect(try await h.outcome(.int(Int64(i))).value == 100) }
        try await h.outcome(.string("other"))
        // Five starts 50 ms apart take at least 200 ms; the other host was not spaced behind them.
        #expect(ContinuousClock.now - began >= .milliseconds(200))
        let order = h.events.compactMap { event -> DownloadToken? in
            if case .started(let t, _) = event { return t } else { return nil }
        }
        #expect(order == [.int(0), .string("other"), .int(1), .int(2), .int(3), .int(4)])
    }
}
