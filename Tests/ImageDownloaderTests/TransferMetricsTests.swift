import Foundation
import ImageDownloader
import Logging
import Testing
import TestSupport

/// Every terminal event's metrics, from real transfers on loopback.
@Suite struct TransferMetricsTests {
    func metrics(_ h: DownloaderHarness, _ token: DownloadToken) -> TransferMetrics? {
        for case .completed(let t, _, _, let m) in h.events where t == token { return m }
        return nil
    }

    @Test func aNewConnectionThenAReusedOne() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("a", bytes(120_000))
        // The body stops after its first chunk until the test has seen the response and waited: the
        // transfer lasts at least that long however late a loaded machine handles each chunk.
        try await h.start(.string("first"), h.server.url("/files/a?chunk=20000&delayMs=5&pauseAt=20000&gate=transfer"))
        try await h.until("the response") {
            h.events(.string("first")).contains { if case .response = $0 { return true } else { return false } }
        }
        try await Task.sleep(for: .milliseconds(30))
        h.server.openGate("transfer")
        try await h.outcome(.string("first"))
        let first = try #require(metrics(h, .string("first")))
        #expect(first.attempts == 1 && first.redirects == 0 && !first.fromCache)
        #expect(first.wireBytes == 120_000)
        #expect(first.httpVersion == "1.1")
        #expect(first.remoteAddress == "127.0.0.1:\(h.server.port)")
        #expect(first.reusedConnection == false && first.connectMs != nil)
        #expect(first.queuedMs != nil && first.ttfbMs != nil)
        #expect((first.transferMs ?? 0) >= 20, "held 30 ms after its response")
        try await h.start(.string("second"), h.server.url("/redirect/2/a"))
        try await h.outcome(.string("second"))
        let second = try #require(metrics(h, .string("second")))
        #expect(second.reusedConnection == true && second.connectMs == nil, "the idle connection was reused")
        #expect(second.redirects == 2)
        #expect(h.server.connections == 1)
        let totals = await h.downloader.status().totals
        #expect(totals.fetches == 2 && totals.wireBytes == 240_000 && totals.redirects == 2)
        #expect(totals.newConnections == 1 && totals.reusedConnections == 1)
    }

    @Test func failuresAndRetriesHaveMetricsToo() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxRetries = 2
            $0.retryBaseDelayMs = 1
        }
        defer { Task { await h.shutdown() } }
        try await h.start(.string("gone"), h.server.url("/status/503"))
        #expect(try await h.outcome(.string("gone")).failure != nil)
        let gone = try #require(metrics(h, .string("gone")))
        #expect(gone.attempts == 3)
        #expect(gone.ttfbMs != nil && gone.httpVersion == "1.1")
        #expect(gone.wireBytes == 0)
        // Cancelled while queued: only its time in the queue.
        var configuration = await h.downloader.configuration
        configuration.suspended = true
        await h.downloader.configure(configuration)
        try await h.start(.string("waiting"), h.server.url("/files/none"))
        try await Task.sleep(for: .milliseconds(30))
        await h.downloader.cancel(.string("waiting"))
        let waiting = try #require(metrics(h, .string("waiting")))
        #expect(waiting.attempts == 0 && waiting.ttfbMs == nil && waiting.httpVersion == nil)
        #expect((waiting.queuedMs ?? 0) >= 30)
    }

    /// HTTP/2 proven: six downloads at once from a TLS server that speaks h2 share one connection,
    /// and the version is in the metrics.
    @Test func http2MultiplexesDownloadsOnOneConnection() async throws {
        let h = try await DownloaderHarness.make { $0.maxConcurrentDownloads = 6 }
        defer { Task { await h.shutdown() } }
        let tls = try await TestHTTPServer.startTLS(http2: true)
        defer { Task { await tls.shutdown() } }
        tls.setFile("m", bytes(400_000))
        // One download first: the pool then knows the host speaks h2 (before that, AsyncHTTPClient
        // may open a connection per waiting request while it learns the protocol).
        try await h.start(.string("warm"), tls.url("/files/m")) { $0.allowInvalidCertificates = true }
        #expect(try await h.outcome(.string("warm")).value == 400_000)
        for i in 0..<6 {
            try await h.start(.int(Int64(i)), tls.url("/files/m?gate=all&n=\(i)")) { $0.allowInvalidCertificates = true }
        }
        // All six are in flight at once (the server holds every answer until the gate opens).
        try await h.until("six requests in flight") { tls.hits("/files/m") == 7 }
        tls.openGate("all")
        for i in 0..<6 { #expect(try await h.outcome(.int(Int64(i))).value == 400_000) }
        #expect(tls.connections == 1, "one connection carried all six")
        let all = (0..<6).compactMap { metrics(h, .int(Int64($0))) }
        #expect(all.count == 6)
        #expect(all.allSatisfy { $0.httpVersion == "2" && $0.remoteAddress == "127.0.0.1:\(tls.port)" && $0.wireBytes == 400_000 })
        #expect(await h.downloader.status().totals.http2 == 7)
        #expect(all.allSatisfy { $0.reusedConnection == true }, "each stream went on the open connection")
    }

    @Test func cacheAndResumeShowInTheMetrics() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-metrics-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = try HTTPCache(directory: directory, maxBytes: 1 << 30, logger: Logger(label: "metrics"))
        let h = try await DownloaderHarness.make({
            $0.maxRetries = 4
            $0.retryBaseDelayMs = 1
            $0.retryMaxDelayMs = 5
        }, cache: cache)
        defer { Task { await h.shutdown() } }
        h.server.setFile("c", bytes(300_000))
        try await h.start(.string("cut"), h.server.url("/files/c?ranges=1&drops=2&seed=7"))
        #expect(try await h.outcome(.string("cut")).value == 300_000)
        let cut = try #require(metrics(h, .string("cut")))
        #expect(cut.attempts == 3 && cut.resumed == 2)
        #expect(cut.wireBytes == 300_000, "each byte fetched once")
        h.server.setFile("d", bytes(5_000))
        try await h.start(.string("fill"), h.server.url("/files/d?cc=max-age%3D600"))
        try await h.outcome(.string("fill"))
        try await h.start(.string("hit"), h.server.url("/files/d?cc=max-age%3D600"))
        try await h.outcome(.string("hit"))
        let hit = try #require(metrics(h, .string("hit")))
        #expect(hit.fromCache && !hit.revalidated && hit.wireBytes == 0)
        #expect(hit.httpVersion == nil && hit.remoteAddress == nil && hit.ttfbMs == nil, "no request was made")
    }
}
