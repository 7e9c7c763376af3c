import Foundation
import ImageDownloader
import Testing
import TestSupport

/// Coalescing, priorities, order, suspension and cancellation with real fetches.
@Suite struct QueueBehaviourTests {
    func startOrder(_ h: DownloaderHarness) -> [DownloadToken] {
        h.events.compactMap { if case .started(let t, _) = $0 { return t } else { return nil } }
    }

    /// Downloads /files/`name`, its processing held until `gate` lets it pass; its result is the
    /// body's size.
    func startGated(_ h: DownloaderHarness, _ name: String, _ gate: PassGate) async throws {
        try await h.downloader.reserve(.string(name), url: h.server.url("/files/\(name)"), priority: .normal)
        await h.downloader.start(DownloadRequest(token: .string(name), url: h.server.url("/files/\(name)"))) { resource, _ in
            await gate.pass()  // processing until the test lets it end
            return resource.byteCount
        }
    }

    @Test func requestsForTheSameResourceShareOneFetch() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(50_000))
        let url = h.server.url("/files/s.bin?gate=g1")
        let tokens: [DownloadToken] = [.string("a"), .string("b"), .int(3)]
        for token in tokens { try await h.start(token, url) }
        try await h.until("the request reached the server") { h.server.hits("/files/s.bin") == 1 }
        h.server.openGate("g1")
        for token in tokens { #expect(try await h.outcome(token).value == 50_000) }
        #expect(h.server.hits("/files/s.bin") == 1)
        for token in tokens {
            let kinds = h.events(token).map { e -> String in
                switch e { case .started: "s"; case .response: "r"; case .progress: "p"; case .completed: "c" }
            }
            #expect(kinds.first == "s" && kinds[1] == "r" && kinds.last == "c", "\(token): \(kinds)")
        }
    }

    @Test func differentHeadersOrCredentialsDoNotCoalesce() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(10))
        let url = h.server.url("/files/s.bin?gate=g2")
        try await h.start(.string("plain"), url)
        try await h.start(.string("header"), url) { $0.headers = [("X-A", "1")] }
        try await h.start(.string("creds"), url) { $0.credentials = Credentials(user: "u", password: "p") }
        try await h.until("three requests") { h.server.hits("/files/s.bin") == 3 }
        h.server.openGate("g2")
        for name in ["plain", "header", "creds"] { #expect(try await h.outcome(.string(name)).value == 10) }
    }

    @Test func cancellingOneCoalescedTokenLeavesTheOthersAndTheFetch() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(100_000))
        // Half the body, then the server holds the rest until the test lets it go.
        let url = h.server.url("/files/s.bin?chunk=5000&pauseAt=50000&gate=half")
        try await h.start(.string("a"), url)
        try await h.start(.string("b"), url)
        try await h.until("bytes arrived") {
            h.events(.string("a")).contains { if case .progress(_, let r, _) = $0 { return r > 0 } else { return false } }
        }
        #expect(await h.downloader.cancel(.string("a")))
        #expect(try await h.outcome(.string("a")).isCancelled)
        h.server.openGate("half")
        #expect(try await h.outcome(.string("b")).value == 100_000)
        #expect(h.server.hits("/files/s.bin") == 1)
        #expect(await h.downloader.cancel(.string("a")) == false, "cancel is idempotent: unknown now")
    }

    @Test func cancellingTheLastTokenStopsTheTransfer() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(1_000_000))
        try await h.start(.string("a"), h.server.url("/files/s.bin?chunk=1000&delayMs=20"))
        try await h.until("started") { h.started(.string("a")) }
        await h.downloader.cancel(.string("a"))
        #expect(try await h.outcome(.string("a")).isCancelled)
        let status = await h.downloader.status()
        #expect(status.runningFetches == 0 && status.liveTokens.isEmpty)
    }

    @Test func higherPriorityStartsFirstAndSetPriorityReorders() async throws {
        let h = try await DownloaderHarness.make { $0.maxConcurrentDownloads = 1 }
        defer { Task { await h.shutdown() } }
        for name in ["blocker", "low", "normal", "high", "raised"] { h.server.setFile(name, bytes(10)) }
        try await h.start(.string("blocker"), h.server.url("/files/blocker?gate=p1"))
        try await h.until("blocker running") { h.started(.string("blocker")) }
        try await h.start(.string("low"), h.server.url("/files/low"), priority: .low)
        try await h.start(.string("normal"), h.server.url("/files/normal"), priority: .normal)
        try await h.start(.string("high"), h.server.url("/files/high"), priority: .high)
        try await h.start(.string("raised"), h.server.url("/files/raised"), priority: .veryLow)
        #expect(await h.downloader.setPriority(.string("raised"), .veryHigh))
        h.server.openGate("p1")
        for name in ["low", "normal", "high", "raised"] { _ = try await h.outcome(.string(name)) }
        #expect(startOrder(h) == ["blocker", "raised", "high", "normal", "low"].map { .string($0) })
    }

    /// A fetch gives its running and per-host slot back once its body is in: a slow decode
    /// does not keep the network idle. The bodies waiting for processing are bounded by
    /// `maxDeliveringFetches`: at that many, no new fetch starts until one is processed.
    @Test func aFetchGivesItsSlotBackWhenItsBodyIsIn() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 1
            $0.maxConcurrentPerHost = 1
            $0.maxDeliveringFetches = 2
        }
        defer { Task { await h.shutdown() } }
        for (i, name) in ["first", "second", "third"].enumerated() { h.server.setFile(name, bytes(10 * (i + 1))) }
        let gate = PassGate()
        try await startGated(h, "first", gate)
        try await startGated(h, "second", gate)
        try await startGated(h, "third", gate)
        // first and second are fetched one after the other although neither is processed yet.
        // (With the slot held until processing ends, the second would never be fetched here.)
        try await h.until("both bodies in, neither holding a slot") {
            let status = await h.downloader.status()
            return h.server.hits("/files/second") == 1 && status.runningFetches == 0
                && status.liveTokens.filter { $0.state == .delivering }.count == 2
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!h.started(.string("third")), "the delivery stage is full: the third fetch waits")
        await gate.open(1)
        _ = try await h.outcome(.string("first"))
        try await h.until("third fetched") { h.server.hits("/files/third") == 1 }
        await gate.open(2)
        #expect(try await h.outcome(.string("second")).value == 20)
        #expect(try await h.outcome(.string("third")).value == 30)
        #expect(startOrder(h) == [.string("first"), .string("second"), .string("third")])
    }

    /// From `minDeliveringFetches` on, bodies holding `maxDeliveringBytes` also fill the delivery
    /// stage: small ones wait up to `maxDeliveringFetches`, a large one stops new fetches alone.
    @Test func largeBodiesFillTheDeliveryStageSooner() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 1
            $0.maxConcurrentPerHost = 1
            $0.minDeliveringFetches = 1
            $0.maxDeliveringFetches = 3
            $0.maxDeliveringBytes = 1000
        }
        defer { Task { await h.shutdown() } }
        let names = ["large", "after-large", "small1", "small2", "small3", "small4"]
        for name in names { h.server.setFile(name, bytes(name == "large" ? 1500 : 10)) }
        let gate = PassGate()
        try await startGated(h, "large", gate)
        try await startGated(h, "after-large", gate)
        try await h.until("the large body in") { await h.downloader.status().deliveringFetches >= 1 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(h.server.hits("/files/after-large") == 0, "one body of 1,500 bytes fills the stage")
        await gate.open(1)
        #expect(try await h.outcome(.string("large")).value == 1500)
        try await h.until("the next body in") { await h.downloader.status().deliveringFetches == 1 }
        for name in names.dropFirst(2) { try await startGated(h, name, gate) }
        try await h.until("three bodies in") { await h.downloader.status().deliveringFetches == 3 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(h.server.hits("/files/small3") == 0, "at maxDeliveringFetches the stage is full however small")
        await gate.open(1)
        try await h.until("the last one fetched") { h.server.hits("/files/small3") == 1 }
        await gate.open(10)
        for name in names.dropFirst() { #expect(try await h.outcome(.string(name)).value == 10) }
        #expect(startOrder(h) == names.map { .string($0) })
    }

    /// A token cancelled while its body is processed ends at once (cancelled); what its
    /// processor still delivers is handed back (`discarded`), for the caller to undo.
    @Test func aResultDeliveredAfterItsTokenEndedIsHandedBack() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("late", bytes(33))
        let gate = PassGate()
        try await h.downloader.reserve(.string("late"), url: h.server.url("/files/late"), priority: .normal)
        await h.downloader.start(DownloadRequest(token: .string("late"), url: h.server.url("/files/late"))) { resource, _ in
            await gate.pass()
            return resource.byteCount
        }
        try await h.until("in delivery") { await h.downloader.status().deliveringTokens == 1 }
        #expect(await h.downloader.cancel(.string("late")))
        guard case .cancelled = try await h.outcome(.string("late")) else {
            Issue.record("not cancelled")
            return
        }
        await gate.open(1)
        try await h.until("handed back") { h.recorder.discarded.withLock { $0 } == [33] }
    }

    @Test func aCoalescedFetchTakesItsHighestTokenPriority() async throws {
        let h = try await DownloaderHarness.make { $0.maxConcurrentDownloads = 1 }
        defer { Task { await h.shutdown() } }
        for name in ["blocker", "x", "y"] { h.server.setFile(name, bytes(10)) }
        try await h.start(.string("blocker"), h.server.url("/files/blocker?gate=p2"))
        try await h.until("blocker running") { h.started(.string("blocker")) }
        try await h.start(.string("x1"), h.server.url("/files/x"), priority: .low)
        try await h.start(.string("y"), h.server.url("/files/y"), priority: .normal)
        try await h.start(.string("x2"), h.server.url("/files/x"), priority: .high)  // joins x1: x now high
        h.server.openGate("p2")
        for name in ["x1", "x2", "y"] { _ = try await h.outcome(.string(name)) }
        let order = startOrder(h)
        #expect(order.firstIndex(of: .string("x1"))! < order.firstIndex(of: .string("y"))!)
    }

    @Test func lifoStartsTheNewestFirst() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 1
            $0.executionOrder = .lifo
        }
        defer { Task { await h.shutdown() } }
        for i in 0..<4 { h.server.setFile("f\(i)", bytes(10)) }
        try await h.start(.int(0), h.server.url("/files/f0?gate=l1"))
        try await h.until("first running") { h.started(.int(0)) }
        for i in 1..<4 { try await h.start(.int(Int64(i)), h.server.url("/files/f\(i)")) }
        h.server.openGate("l1")
        for i in 1..<4 { _ = try await h.outcome(.int(Int64(i))) }
        #expect(startOrder(h) == [0, 3, 2, 1].map { .int($0) })
    }

    @Test func suspendedQueueStartsNothingUntilResumed() async throws {
        let h = try await DownloaderHarness.make { $0.suspended = true }
        defer { Task { await h.shutdown() } }
        h.server.setFile("s", bytes(10))
        try await h.start(.string("a"), h.server.url("/files/s"))
        try await Task.sleep(for: .milliseconds(100))
        #expect(!h.started(.string("a")))
        #expect(await h.downloader.status().queuedTokens == 1)
        var configuration = await h.downloader.configuration
        configuration.suspended = false
        await h.downloader.configure(configuration)
        #expect(try await h.outcome(.string("a")).value == 10)
    }

    @Test func cancelAllEndsEveryTokenWithoutStartingWaitingOnes() async throws {
        let h = try await DownloaderHarness.make { $0.maxConcurrentDownloads = 2 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("s", bytes(10))
        for i in 0..<10 { try await h.start(.int(Int64(i)), h.server.url("/files/s?gate=never&n=\(i % 5)")) }
        try await h.until("two running") { h.server.hits("/files/s") == 2 }
        #expect(await h.downloader.cancelAll() == 10)
        for i in 0..<10 { #expect(try await h.outcome(.int(Int64(i))).isCancelled) }
        #expect(startOrder(h).count <= 10)
        let startedAfterCancel = h.events.drop { if case .completed = $0 { return false } else { return true } }
            .contains { if case .started = $0 { return true } else { return false } }
        #expect(!startedAfterCancel, "cancelAll must not start waiting fetches in freed slots")
    }

    /// The headline invariant under stress: random downloads, cancels and priority changes, with
    /// every concurrency limit from 1 to 8 — every token ends with exactly one terminal event, and
    /// nothing follows it.
    @Test(arguments: Array(1...8))
    func everyTokenEndsExactlyOnceUnderRandomCancelsAndPriorityChanges(limit: Int) async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = limit
            $0.maxRetries = 1
        }
        defer { Task { await h.shutdown() } }
        for i in 0..<6 { h.server.setFile("f\(i)", bytes(20_000 + i * 5000)) }
        var rng = SplitMix(seed: UInt64(limit) * 7919)
        let paths = (0..<6).map { "/files/f\($0)?chunk=4000&delayMs=\($0 % 3)" } + ["/status/404", "/status/503", "/files/f1?resetAfter=5000", "/files/f2?chunked=1"]
        var tokens: [DownloadToken] = []
        for i in 0..<80 {
            let token = DownloadToken.int(Int64(i))
            tokens.append(token)
            let path = paths[Int(rng.next() % UInt64(paths.count))]
            try await h.start(token, h.server.url(path), priority: DownloadPriority(rawValue: Int(rng.next() % 5))!)
            switch rng.next() % 4 {
            case 0: await h.downloader.cancel(tokens[Int(rng.next() % UInt64(tokens.count))])
            case 1: await h.downloader.setPriority(tokens[Int(rng.next() % UInt64(tokens.count))], DownloadPriority(rawValue: Int(rng.next() % 5))!)
            default: break
            }
            if rng.next() % 5 == 0 { try await Task.sleep(for: .milliseconds(Int(rng.next() % 5))) }
        }
        try await h.until("every token ended", timeout: .seconds(60)) { await h.downloader.liveTokenCount == 0 }
        let events = h.events
        for token in tokens {
            let mine = events.filter { $0.token == token }
            let terminals = mine.indices.filter { if case .completed = mine[$0] { return true } else { return false } }
            #expect(terminals.count == 1, "\(token) has \(terminals.count) terminal events")
            #expect(terminals.last == mine.count - 1, "\(token) has events after its terminal one")
        }
    }
}

