import Foundation
import ImageDownloader
import Testing
import TestSupport

/// The downloader against a real HTTP server on 127.0.0.1 that misbehaves on purpose.
@Suite struct DownloaderIntegrationTests {
    let t = DownloadToken.string("t")

    /// A refused connection reads as one sentence: the reason and where, once (NIO's own
    /// description said it three times, with an errno).
    @Test func aRefusedConnectionSaysSoOnce() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 0 }
        defer { Task { await h.shutdown() } }
        try await h.start(.string("refused"), "http://127.0.0.1:9/x.jpg")
        guard case .failure(let failure) = try await h.outcome(.string("refused")) else {
            Issue.record("port 9 answered")
            return
        }
        #expect(failure.description.hasSuffix("connection refused while connecting to 127.0.0.1:9"), "\(failure)")
        #expect(!failure.description.contains("errno") && !failure.description.contains("error set"), "\(failure)")
    }

    /// Requests without headers of their own share the merged defaults; a configuration change
    /// reaches the next request (the shared copy is made again).
    @Test func aNewConfigurationsHeadersReachTheNextRequest() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        func sent(_ token: String) async throws -> [String: String] {
            try await h.start(.string(token), h.server.url("/echo-headers?t=\(token)"))
            try await h.outcome(.string(token))
            return Dictionary(h.server.lastHeaders("/echo-headers").map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { a, _ in a })
        }
        #expect(try await sent("a")["user-agent"] == "image-worker-tests/1")
        var configuration = await h.downloader.configuration
        configuration.userAgent = "image-worker-tests/2"
        configuration.headers = ["X-Team": "blue"]
        await h.downloader.configure(configuration)
        let after = try await sent("b")
        #expect(after["user-agent"] == "image-worker-tests/2")
        #expect(after["x-team"] == "blue")
    }

    @Test func downloadsWithEventsInOrder() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("a.bin", bytes(200_000))
        try await h.start(t, h.server.url("/files/a.bin?chunk=16384&delayMs=2"))
        #expect(try await h.outcome(t).value == 200_000)
        let events = h.events(t)
        guard case .started = events.first, case .response(_, _, let info) = events[1], case .completed = events.last else {
            Issue.record("bad order: \(events)")
            return
        }
        #expect(info.status == 200 && info.expectedBytes == 200_000 && info.httpVersion == "1.1")
        let progress = events.compactMap { e -> Int64? in if case .progress(_, let r, _) = e { return r } else { return nil } }
        #expect(progress.first == 0 && progress.last == 200_000)
        #expect(progress == progress.sorted(), "receivedBytes never decreases")
        #expect(progress.count >= 2)
    }

    @Test func chunkedBodyOfUnknownLength() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("c.bin", bytes(100_000))
        try await h.start(t, h.server.url("/files/c.bin?chunked=1&chunk=10000"))
        #expect(try await h.outcome(t).value == 100_000)
        for case .progress(_, _, let expected) in h.events(t) { #expect(expected == nil) }
    }

    @Test func aStalledBodyTimesOut() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 0 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(10_000))
        try await h.start(t, h.server.url("/files/s.bin?stallAfter=1000")) { $0.timeoutMs = 300 }
        #expect(try await h.outcome(t).failure == .network(.timeout, "no data for 300 ms"))
    }

    /// One timer watches every attempt: a shorter deadline armed after a longer one still comes
    /// first, each attempt is stopped by its own timeout, and an attempt whose bytes keep coming
    /// is never stopped.
    @Test func eachAttemptKeepsItsOwnIdleDeadline() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 0 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("s.bin", bytes(10_000))
        h.server.setFile("slow.bin", bytes(60_000))
        let long = DownloadToken.string("long"), short = DownloadToken.string("short"), steady = DownloadToken.string("steady")
        try await h.start(long, h.server.url("/files/s.bin?stallAfter=1000&n=1")) { $0.timeoutMs = 60_000 }
        try await h.until("the long one has started") { h.started(long) }
        try await h.start(short, h.server.url("/files/s.bin?stallAfter=1000&n=2")) { $0.timeoutMs = 300 }
        try await h.start(steady, h.server.url("/files/slow.bin?chunk=6000&delayMs=100")) { $0.timeoutMs = 3_000 }
        #expect(try await h.outcome(short, timeout: .seconds(15)).failure == .network(.timeout, "no data for 300 ms"))
        #expect(try await h.outcome(steady, timeout: .seconds(15)).value == 60_000, "a chunk every 100 ms never idles 3 s")
        #expect(!h.events(long).contains { if case .completed = $0 { return true } else { return false } }, "still within its 60 s")
        _ = await h.downloader.cancel(long)
        #expect(try await h.outcome(long).isCancelled)
    }

    @Test func aResetMidBodyIsANetworkErrorNeverASuccess() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("r.bin", bytes(100_000))
        try await h.start(t, h.server.url("/files/r.bin?resetAfter=30000&chunk=10000&delayMs=5"))
        guard case .network(let reason, _)? = try await h.outcome(t).failure else {
            Issue.record("expected a network error, got \(h.events(t).last!)")
            return
        }
        #expect(reason == .truncated || reason == .reset)
    }

    @Test func aShortBodyIsANetworkErrorNeverASuccess() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("short.bin", bytes(50_000))
        try await h.start(t, h.server.url("/files/short.bin?shortBy=100"))
        guard case .network(.truncated, _)? = try await h.outcome(t).failure else {
            Issue.record("expected truncated, got \(h.events(t).last!)")
            return
        }
    }

    @Test func notFoundFailsOnceAndIsThenBlockedUnlessRetryFailed() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        let url = h.server.url("/status/404")
        try await h.start(t, url)
        #expect(try await h.outcome(t).failure == .statusCode(404, retryAfterSeconds: nil))
        #expect(h.server.hits("/status/404") == 1, "4xx is never retried")
        let again = DownloadToken.string("again")
        try await h.start(again, url)
        guard case .blocked? = try await h.outcome(again).failure else { Issue.record("expected BlockedURL"); return }
        #expect(h.server.hits("/status/404") == 1, "a blocked URL is refused without a request")
        #expect(!h.started(again))
        let retry = DownloadToken.string("retry")
        try await h.start(retry, url) { $0.retryFailed = true }
        #expect(try await h.outcome(retry).failure == .statusCode(404, retryAfterSeconds: nil))
        #expect(h.server.hits("/status/404") == 2)
    }

    /// A URL asked for in a form that is fetched as another (spaces around it, a backslash for
    /// a slash) is blocked in the form it was asked in, and a success takes it off the list.
    @Test func aURLIsBlockedAsItWasAsked() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        let asked = " " + h.server.url("/status/404").replacingOccurrences(of: "/status/", with: "\\status/") + " "
        try await h.start(t, asked)
        #expect(try await h.outcome(t).failure == .statusCode(404, retryAfterSeconds: nil))
        let again = DownloadToken.string("again")
        try await h.start(again, asked)
        guard case .blocked? = try await h.outcome(again).failure else { Issue.record("expected BlockedURL"); return }
        #expect(h.server.hits("/status/404") == 1, "a blocked URL is refused without a request")
    }

    @Test func serverErrorsAreRetriedThenFail() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 2 }
        defer { Task { await h.shutdown() } }
        try await h.start(t, h.server.url("/status/500"))
        let status = DownloadFailure.statusCode(500, retryAfterSeconds: nil)
        #expect(try await h.outcome(t).failure == .afterAttempts(status, attempts: 3, earlier: [status, status]))
        #expect(h.server.hits("/status/500") == 3)
        let next = DownloadToken.string("next")
        try await h.start(next, h.server.url("/status/500"))
        #expect(try await h.outcome(next).failure?.last == status, "5xx does not block the URL")
    }

    /// A body that trickles forever never trips the idle timeout; the token's deadline ends it
    /// (that token alone: another on the same fetch goes on), saying how many attempts it made.
    @Test func aDeadlineBoundsADownloadThatNeverGoesIdle() async throws {
        let h = try await DownloaderHarness.make { $0.timeoutMs = 5_000 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("slow.bin", bytes(100_000))
        let url = h.server.url("/files/slow.bin?chunk=10&delayMs=50")
        let patient = DownloadToken.string("patient")
        try await h.start(t, url) { $0.deadlineMs = 400 }
        try await h.start(patient, url)
        guard case .afterAttempts(.network(.deadline, _), attempts: 1, earlier: [])? = try await h.outcome(t, timeout: .seconds(10)).failure else {
            Issue.record("expected a deadline failure, got \(h.events(t))")
            return
        }
        #expect(h.events(patient).allSatisfy { if case .completed = $0 { false } else { true } }, "the other token goes on")
        #expect(h.server.hits("/files/slow.bin") == 1)
        await h.downloader.cancel(patient)
        #expect(try await h.outcome(patient).isCancelled)
    }

    /// A fetch backing off before a retry lends its running slot to other hosts and keeps its
    /// host's: with one slot, the other host's downloads run while it waits, its own host's next
    /// download waits for it, and it still makes its second attempt and fails once. (Holding the
    /// slot, the other host's downloads would wait behind its whole backoff.)
    @Test func aFetchWaitingToRetryLetsOtherHostsRunInItsSlot() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxRetries = 1
            $0.maxConcurrentDownloads = 1
            $0.maxConcurrentPerHost = 1
            $0.retryMaxDelayMs = 10_000
        }
        let troubled = try await TestHTTPServer.start()
        defer { Task { await h.shutdown(); await troubled.shutdown() } }
        let failing = DownloadToken.string("failing")
        try await h.start(failing, troubled.url("/status/503")) { $0.retryDelayMs = 4_000 }  // waits 2-4 s
        try await h.until("the first attempt failed") { troubled.hits("/status/503") == 1 }
        let sameHost = DownloadToken.string("sameHost")
        try await h.start(sameHost, troubled.url("/status/500")) { $0.retryDelayMs = 10 }
        let others = (0..<3).map { DownloadToken.string("other\($0)") }
        for (n, token) in others.enumerated() {
            h.server.setFile("o\(n).bin", bytes(100 + n))
            try await h.start(token, h.server.url("/files/o\(n).bin"))
        }
        for (n, token) in others.enumerated() { #expect(try await h.outcome(token).value == 100 + n) }
        let waiting = await h.downloader.status()
        #expect(waiting.liveTokens.map(\.state) == [.waitingToRetry, .queued], "the others ran during its backoff")
        #expect(waiting.runningFetches == 1 && waiting.queuedFetches == 1)
        #expect(troubled.hits("/status/500") == 0, "its host's slot stayed taken")
        let unavailable = DownloadFailure.statusCode(503, retryAfterSeconds: nil)
        #expect(try await h.outcome(failing).failure == .afterAttempts(unavailable, attempts: 2, earlier: [unavailable]))
        #expect(troubled.hits("/status/503") == 2)
        let failed = DownloadFailure.statusCode(500, retryAfterSeconds: nil)
        #expect(try await h.outcome(sameHost).failure == .afterAttempts(failed, attempts: 2, earlier: [failed]))
    }

    /// A fetch that lent its slot ends cleanly however it ends: cancelled during its backoff,
    /// or due while the queue is suspended (it waits, in its place, until the queue resumes).
    @Test func aFetchThatLentItsSlotIsCancelledOrWaitsForASuspendedQueue() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxRetries = 1
            $0.maxConcurrentDownloads = 1
            $0.retryMaxDelayMs = 10_000
        }
        defer { Task { await h.shutdown() } }
        let backingOff = DownloadToken.string("backingOff")
        try await h.start(backingOff, h.server.url("/status/503")) { $0.retryDelayMs = 10_000 }
        try await h.until("its first attempt failed") { await h.downloader.status().liveTokens.first?.state == .waitingToRetry }
        #expect(await h.downloader.cancel(backingOff))
        #expect(try await h.outcome(backingOff).isCancelled)
        var status = await h.downloader.status()
        #expect((status.runningFetches, status.queuedFetches, status.liveTokens.count) == (0, 0, 0))
        // Due while suspended: the retry waits in the queue; resumed, it runs and ends.
        h.server.setFile("late.bin", bytes(7))
        let due = DownloadToken.string("due")
        try await h.start(due, h.server.url("/flaky/due/late.bin?failures=1&status=503")) { $0.retryDelayMs = 1_000 }  // 0.5-1 s: time to suspend
        try await h.until("its first attempt failed") { h.server.hits("/flaky/due/late.bin") == 1 }
        var configuration = await h.downloader.configuration
        configuration.suspended = true
        await h.downloader.configure(configuration)
        try await h.until("its retry is due and waits in the queue") { await h.downloader.status().queuedFetches == 1 }
        status = await h.downloader.status()
        #expect(status.liveTokens.map(\.state) == [.waitingToRetry])
        #expect(h.server.hits("/flaky/due/late.bin") == 1, "nothing starts while suspended")
        configuration.suspended = false
        await h.downloader.configure(configuration)
        #expect(try await h.outcome(due).value == 7)
        #expect(h.server.hits("/flaky/due/late.bin") == 2)
    }

    /// A download's own retry budget and delay override the worker's (here: no retries).
    @Test func aDownloadsOwnRetriesOverrideTheWorkers() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 0 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("ok.bin", bytes(10))
        try await h.start(t, h.server.url("/flaky/k/ok.bin?failures=2")) {
            $0.maxRetries = 2
            $0.retryDelayMs = 5
        }
        #expect(try await h.outcome(t).value == 10)
        #expect(h.server.hits("/flaky/k/ok.bin") == 3)
        let once = DownloadToken.string("once")
        try await h.start(once, h.server.url("/status/503"))
        #expect(try await h.outcome(once).failure == .statusCode(503, retryAfterSeconds: nil), "one attempt: no history")
        #expect(h.server.hits("/status/503") == 1)
    }

    @Test func aFlakyServerSucceedsAfterRetries() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 3 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("f.bin", bytes(1000))
        try await h.start(t, h.server.url("/flaky/k1/f.bin?failures=2&status=503"))
        #expect(try await h.outcome(t).value == 1000)
        #expect(h.server.hits("/flaky/k1/f.bin") == 3)
        let started = h.events(t).filter { if case .started = $0 { return true } else { return false } }
        #expect(started.count == 1, "retries are invisible but in the end result")
    }

    @Test func connectionResetsBeforeTheHeadAreRetried() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 2 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("f.bin", bytes(1000))
        try await h.start(t, h.server.url("/flaky/k2/f.bin?failures=1&mode=reset"))
        #expect(try await h.outcome(t).value == 1000)
        #expect(h.server.hits("/flaky/k2/f.bin") == 2)
    }

    @Test func tooManyRequestsHonoursRetryAfter() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 1 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("f.bin", bytes(10))
        let begin = ContinuousClock.now
        try await h.start(t, h.server.url("/flaky/k3/f.bin?failures=1&status=429&retryAfter=1"))
        #expect(try await h.outcome(t).value == 10)
        // Not a timing assertion on speed: waiting *at least* what the server asked is the contract.
        #expect(ContinuousClock.now - begin >= .milliseconds(990))
    }

    @Test func notModifiedWithoutACacheFails() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        try await h.start(t, h.server.url("/not-modified"))
        #expect(try await h.outcome(t).failure == .notModified)
    }

    @Test func redirectsAreFollowedLoopsAndLimitsFail() async throws {
        let h = try await DownloaderHarness.make { $0.maxRedirects = 3 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("r.bin", bytes(10))
        try await h.start(t, h.server.url("/redirect/3/r.bin"))
        #expect(try await h.outcome(t).value == 10)
        let response = h.events(t).compactMap { e -> ResponseInfo? in if case .response(_, _, let i) = e { return i } else { return nil } }
        #expect(response.first?.finalURL == h.server.url("/files/r.bin"))

        let tooMany = DownloadToken.string("many")
        try await h.start(tooMany, h.server.url("/redirect/4/r.bin"))
        guard case .network(.redirect, _)? = try await h.outcome(tooMany).failure else { Issue.record("limit"); return }
        let loop = DownloadToken.string("loop")
        try await h.start(loop, h.server.url("/loop/a"))
        guard case .network(.redirect, let message)? = try await h.outcome(loop).failure else { Issue.record("loop"); return }
        #expect(message.contains("loop"))
    }

    @Test func anAnnouncedHugeBodyFailsBeforeAnyByte() async throws {
        let h = try await DownloaderHarness.make { $0.maxBodyBytes = 1 << 20 }
        defer { Task { await h.shutdown() } }
        try await h.start(t, h.server.url("/huge"))
        #expect(try await h.outcome(t).failure == .limitExceeded(.bodyBytes, limit: 1 << 20, actual: 10_000_000_000))
    }

    @Test func aStreamedBodyOverTheLimitFailsWhileStreaming() async throws {
        let h = try await DownloaderHarness.make { $0.maxBodyBytes = 50_000 }
        defer { Task { await h.shutdown() } }
        h.server.setFile("big.bin", bytes(200_000))
        try await h.start(t, h.server.url("/files/big.bin?chunked=1&chunk=10000"))
        #expect(try await h.outcome(t).failure == .limitExceeded(.bodyBytes, limit: 50_000, actual: nil))
    }

    @Test func aDeadServerFailsItsURLQuickly() async throws {
        let h = try await DownloaderHarness.make { $0.maxRetries = 1 }
        defer { Task { await h.shutdown() } }
        // A port that was just free: nothing listens there.
        let dead = try await TestHTTPServer.start()
        let url = dead.url("/files/x")
        await dead.shutdown()
        h.server.setFile("ok.bin", bytes(5))
        try await h.start(t, url)
        let ok = DownloadToken.string("ok")
        try await h.start(ok, h.server.url("/files/ok.bin"))
        guard case .network(.connection, _)? = try await h.outcome(t, timeout: .seconds(10)).failure?.last else {
            Issue.record("expected a connection error, got \(h.events(t))")
            return
        }
        #expect(try await h.outcome(ok).value == 5, "other URLs are unaffected")
    }

    @Test func headersUserAgentAcceptAndDefaults() async throws {
        let h = try await DownloaderHarness.make { $0.headers = ["X-Default": "d", "X-Both": "default"] }
        defer { Task { await h.shutdown() } }
        try await h.start(t, h.server.url("/echo-headers")) { $0.headers = [("X-Both", "own"), ("X-Own", "o")] }
        _ = try await h.outcome(t)
        let headers = Dictionary(h.server.lastHeaders("/echo-headers").map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { a, _ in a })
        #expect(headers["user-agent"] == "image-worker-tests/1")
        #expect(headers["accept"] == "image/*,*/*;q=0.8")
        #expect(headers["x-default"] == "d")
        #expect(headers["x-both"] == "own")
        #expect(headers["x-own"] == "o")
        #expect(headers["cookie"] == nil)
    }

    @Test func basicAuthCredentials() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("p.bin", bytes(3))
        try await h.start(t, h.server.url("/auth/p.bin")) { $0.credentials = Credentials(user: "user", password: "pass") }
        #expect(try await h.outcome(t).value == 3)
        let without = DownloadToken.string("without")
        try await h.start(without, h.server.url("/auth/p.bin"))
        #expect(try await h.outcome(without).failure == .statusCode(401, retryAfterSeconds: nil))
    }

    @Test func credentialsAreNotSentToAnotherOriginAfterARedirect() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        let other = try await TestHTTPServer.start()
        defer { Task { await other.shutdown() } }
        let target = other.url("/echo-headers")
        try await h.start(t, h.server.url("/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")) {
            $0.credentials = Credentials(user: "user", password: "pass")
        }
        #expect(try await h.outcome(t).value != nil)
        #expect(h.server.lastHeaders("/redirect-to").contains { $0.0.lowercased() == "authorization" })
        #expect(!other.lastHeaders("/echo-headers").contains { $0.0.lowercased() == "authorization" })
    }

    @Test func cookiesOnlyWhenAsked() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        h.server.setFile("c.bin", bytes(4))
        try await h.start(.string("set"), h.server.url("/set-cookie/c.bin")) { $0.handleCookies = true }
        _ = try await h.outcome(.string("set"))
        try await h.start(.string("with"), h.server.url("/needs-cookie/c.bin")) { $0.handleCookies = true }
        #expect(try await h.outcome(.string("with")).value == 4)
        try await h.start(.string("without"), h.server.url("/needs-cookie/c.bin"))
        #expect(try await h.outcome(.string("without")).failure == .statusCode(403, retryAfterSeconds: nil))
    }

    @Test func invalidURLsEndAtOnceWithoutStarting() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        for (i, url) in ["", "not a url", "ftp://x/y", "http://", "mailto:a@b"].enumerated() {
            let token = DownloadToken.int(Int64(i))
            try await h.start(token, url)
            guard case .invalidURL? = try await h.outcome(token).failure else { Issue.record("\(url): \(h.events(token))"); continue }
            #expect(h.events(token).count == 1)
        }
    }

    @Test func fileURLsBelowTheRootOnly() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("iw-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data(bytes(300_000)).write(to: root.appendingPathComponent("a.png"))
        let h = try await DownloaderHarness.make(fileRoot: root.path)
        defer { Task { await h.shutdown() } }
        try await h.start(t, root.appendingPathComponent("a.png").absoluteString)
        #expect(try await h.outcome(t).value == 300_000)
        try await h.start(.string("out"), "file:///etc/hostname")
        guard case .invalidOperation? = try await h.outcome(.string("out")).failure else { Issue.record("outside root"); return }
    }

    @Test func tokensAreUniqueWhileLive() async throws {
        let h = try await DownloaderHarness.make()
        defer { Task { await h.shutdown() } }
        try await h.downloader.reserve(t, url: "http://x/", priority: .normal)
        await #expect(throws: Downloader<Int, Never>.TokenInUse.self) { try await h.downloader.reserve(t, url: "http://x/", priority: .normal) }
        await #expect(throws: Never.self) { try await h.downloader.reserve(.int(1), url: "http://x/", priority: .normal) }
        await #expect(throws: Never.self) { try await h.downloader.reserve(.string("1"), url: "http://x/", priority: .normal) }
        // Cancelled while reserved: the terminal event comes when it starts, and the token frees.
        #expect(await h.downloader.cancel(t))
        await h.downloader.start(DownloadRequest(token: t, url: "http://x/")) { resource, _ in resource.byteCount }
        #expect(try await h.outcome(t).isCancelled)
        await #expect(throws: Never.self) { try await h.downloader.reserve(t, url: "http://x/", priority: .normal) }
    }
}
