import Foundation
@testable import ImageDownloader
import Testing
import TestSupport

/// `HostHealth` as a value: no I/O, clock readings given.
@Suite struct HostHealthTests {
    typealias Health = HostHealth<Int>
    let rule = Health.Settings(failuresInARow: 3, downNs: 1_000)
    let refused = DownloadFailure.network(.connection, "connection refused while connecting to 127.0.0.1:9")

    func isRefusal(_ admission: Health.Admission) -> Bool {
        if case .refuse = admission { return true } else { return false }
    }

    @Test func downAfterFailuresInARowThenOneProbeWhenTheTimeIsUp() {
        var health = Health()
        let host = "http://127.0.0.1:9"
        for id in 1...2 {
            #expect(health.admit(id, host: host, now: 0, settings: rule) == .go)
            let wentDown = health.ended(id, host: host, .notReached(refused), now: 10, settings: rule)
            #expect(!wentDown)
        }
        #expect(health.admit(3, host: host, now: 10, settings: rule) == .go, "two failures: not down yet")
        #expect(health.downHosts.isEmpty)
        let third = health.ended(3, host: host, .notReached(refused), now: 20, settings: rule)
        #expect(third, "the third makes it down")
        #expect(health.downHosts == [host])

        // Down: attempts end at once, saying why and for how long.
        guard case .refuse(let failure) = health.admit(4, host: host, now: 500, settings: rule) else {
            Issue.record("a down host's attempt went")
            return
        }
        guard case .network(.hostDown, let message) = failure else {
            Issue.record("not a hostDown failure: \(failure)")
            return
        }
        #expect(message.contains("\(host) is down: 3 connection attempts in a row failed"), "\(message)")
        #expect(message.contains("connection refused while connecting to 127.0.0.1:9"), "\(message)")
        #expect(message.contains("not tried again for 1 s"), "\(message)")
        #expect(!failure.isTransient && !failure.isConnectionFailure && !failure.blocksURL, "not retried, not counted, not blocking")

        // Time is up: one probe; the others still end at once while it tries.
        #expect(health.admit(5, host: host, now: 1_020, settings: rule) == .probe)
        #expect(health.admit(5, host: host, now: 1_021, settings: rule) == .probe, "the probe's own next attempt")
        guard case .refuse(let meanwhile) = health.admit(6, host: host, now: 1_030, settings: rule) else {
            Issue.record("a second attempt went while the probe was out")
            return
        }
        #expect(meanwhile.description.contains("one attempt is trying whether it is back"), "\(meanwhile)")

        // The probe fails: down for another period, from its end.
        let probeFailed = health.ended(5, host: host, .notReached(refused), now: 1_100, settings: rule)
        #expect(probeFailed)
        #expect(isRefusal(health.admit(7, host: host, now: 2_000, settings: rule)))
        #expect(health.admit(7, host: host, now: 2_100, settings: rule) == .probe)
        // It reaches the host: up again, with a fresh count.
        let back = health.ended(7, host: host, .reached, now: 2_150, settings: rule)
        #expect(!back)
        #expect(health.downHosts.isEmpty)
        for id in 8...9 {
            #expect(health.admit(id, host: host, now: 2_200, settings: rule) == .go)
            health.ended(id, host: host, .notReached(refused), now: 2_200, settings: rule)
        }
        #expect(health.admit(10, host: host, now: 2_200, settings: rule) == .go, "two failures since it came back")
    }

    @Test func anAttemptThatReachesTheHostResetsItsCount() {
        var health = Health()
        let host = "https://example.invalid:443"
        for round in 0..<5 {
            for id in 0..<2 {
                #expect(health.admit(round * 10 + id, host: host, now: 0, settings: rule) == .go)
                health.ended(round * 10 + id, host: host, .notReached(refused), now: 0, settings: rule)
            }
            health.ended(round * 10 + 5, host: host, .reached, now: 0, settings: rule)
        }
        #expect(health.downHosts.isEmpty, "never three in a row")
    }

    @Test func anAbandonedProbeLetsTheNextAttemptProbe() {
        var health = Health()
        let host = "http://h:80"
        for id in 0..<3 { health.ended(id, host: host, .notReached(refused), now: 0, settings: rule) }
        #expect(health.admit(10, host: host, now: 5_000, settings: rule) == .probe)
        // Cancelled before it knew: the probe's answer never comes.
        health.ended(10, host: host, .abandoned, now: 5_001, settings: rule)
        #expect(health.admit(11, host: host, now: 5_002, settings: rule) == .probe)
        // Another attempt's abandonment leaves the probe alone.
        health.ended(12, host: host, .abandoned, now: 5_003, settings: rule)
        #expect(isRefusal(health.admit(13, host: host, now: 5_004, settings: rule)))
    }

    @Test func attemptsUnderWayWhenTheHostWentDownKeepItDown() {
        var health = Health()
        let host = "http://h:80"
        for id in 0..<3 { health.ended(id, host: host, .notReached(refused), now: 100, settings: rule) }
        // Three more that started before it was down, ending now: no new period, no log line.
        for id in 3..<6 {
            let wentDown = health.ended(id, host: host, .notReached(refused), now: 200, settings: rule)
            #expect(!wentDown)
        }
        #expect(health.admit(9, host: host, now: 1_100, settings: rule) == .probe, "down from the first period's start")
        // One of them reaching the host brings it back, probe or not.
        health.ended(6, host: host, .reached, now: 1_101, settings: rule)
        #expect(health.admit(20, host: host, now: 1_102, settings: rule) == .go)
    }

    @Test func hostsAreApartAndZeroTurnsTheRuleOff() {
        var health = Health()
        for id in 0..<3 { health.ended(id, host: "http://a:80", .notReached(refused), now: 0, settings: rule) }
        #expect(isRefusal(health.admit(5, host: "http://a:80", now: 1, settings: rule)))
        #expect(health.admit(6, host: "http://b:80", now: 1, settings: rule) == .go)
        #expect(health.admit(7, host: "http://a:8080", now: 1, settings: rule) == .go, "another port is another host")
        let off = Health.Settings(failuresInARow: 0, downNs: 1_000)
        #expect(health.admit(8, host: "http://a:80", now: 1, settings: off) == .go, "turned off: even a down host goes")
        var fresh = Health()
        for id in 0..<50 { fresh.ended(id, host: "http://c:80", .notReached(refused), now: 0, settings: off) }
        #expect(fresh.downHosts.isEmpty)
        health.removeAll()
        #expect(health.admit(9, host: "http://a:80", now: 1, settings: rule) == .go, "clearFailedURLs forgets it")
    }

    @Test func whichFailuresSayTheHostWasNotReached() {
        #expect(DownloadFailure.network(.connection, "").isConnectionFailure)
        #expect(DownloadFailure.network(.dns, "").isConnectionFailure)
        #expect(DownloadFailure.network(.timeout, "").isConnectionFailure)
        #expect(DownloadFailure.afterAttempts(.network(.connection, ""), attempts: 2, earlier: []).isConnectionFailure)
        #expect(!DownloadFailure.network(.tls, "").isConnectionFailure, "a TLS failure reached the host")
        #expect(!DownloadFailure.network(.proxy, "").isConnectionFailure)
        #expect(!DownloadFailure.statusCode(503, retryAfterSeconds: nil).isConnectionFailure)
        #expect(!DownloadFailure.network(.io, "the transfer was cancelled").isConnectionFailure)
        #expect(!DownloadFailure.network(.hostDown, "").isConnectionFailure, "an attempt not made")
    }
}

/// The rule with real connections: a port that refuses, a port that never answers, a server
/// that comes back on the port, beside a host that works.
@Suite struct DeadHostTests {
    func message(_ outcome: DownloadOutcome<Int, Never>) -> String { outcome.failure?.description ?? "\(outcome)" }

    @Test func aRefusingHostIsDownAfterThreeFailuresAndBackOnceItAnswers() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxRetries = 0
            $0.maxConcurrentPerHost = 1  // one at a time: exactly three connection failures come first
            $0.hostDownAfter = 3
            $0.hostDownMs = 1_500
        }
        defer { Task { await h.shutdown() } }
        let port = try SilentHost.closedPort()
        let base = "http://127.0.0.1:\(port)"
        h.server.setFile("ok", bytes(500))
        for i in 0..<10 { try await h.start(.int(Int64(i)), "\(base)/a\(i).jpg") }
        // A host that works is not held back, and not counted with the dead one.
        try await h.start(.string("good"), h.server.url("/files/ok"))
        #expect(try await h.outcome(.string("good")).value == 500)
        var messages: [String] = []
        for i in 0..<10 { messages.append(message(try await h.outcome(.int(Int64(i))))) }
        for m in messages.prefix(3) { #expect(m.contains("connection refused") && !m.contains("is down"), "\(m)") }
        for m in messages.dropFirst(3) {
            #expect(m.contains("\(base) is down: 3 connection attempts in a row failed (the last: connection refused"), "\(m)")
        }
        #expect(await h.downloader.status().hostsDown == [base])

        // The server comes up on that port: once the time is up, a download goes through as the
        // probe and the host is back. (Before that, each try fails at once.)
        let revived = try await TestHTTPServer.start(port: port)
        defer { Task { await revived.shutdown() } }
        revived.setFile("back", bytes(700))
        var tries = 0
        try await h.until("a download reached the revived host") {
            tries += 1
            let token = DownloadToken.string("try\(tries)")
            try? await h.start(token, "\(base)/files/back?try=\(tries)")
            guard let outcome = try? await h.outcome(token) else { return false }
            if outcome.value == 700 { return true }
            try? await Task.sleep(for: .milliseconds(100))
            return false
        }
        #expect(await h.downloader.status().hostsDown.isEmpty)
        try await h.start(.string("after"), "\(base)/files/back?n=after")
        #expect(try await h.outcome(.string("after")).value == 700)
        #expect(revived.hits("/files/back") == 2, "one probe, then one download: the refused tries never reached it")
    }

    /// The case the rule is for: a host that drops every packet. Its first attempts wait for the
    /// timeout; after three the host is down and the rest of its downloads, and their retries,
    /// end at once, so the slots go to the host that works.
    @Test func aSilentHostsDownloadsEndOnceItIsDown() async throws {
        let h = try await DownloaderHarness.make {
            $0.maxConcurrentDownloads = 6
            $0.maxConcurrentPerHost = 6
            $0.timeoutMs = 1_000  // the idle watchdog ends the connects
            $0.maxRetries = 2
            $0.hostDownAfter = 3
            $0.hostDownMs = 600_000
        }
        defer { Task { await h.shutdown() } }
        let silent = try SilentHost()
        defer { silent.close() }
        h.server.setFile("ok", bytes(300))
        for i in 0..<18 { try await h.start(.int(Int64(i)), "\(silent.baseURL)/a\(i).jpg") }
        for i in 0..<12 { try await h.start(.string("good\(i)"), h.server.url("/files/ok?n=\(i)")) }
        for i in 0..<12 { #expect(try await h.outcome(.string("good\(i)")).value == 300) }
        var down = 0
        for i in 0..<18 {
            let outcome = try await h.outcome(.int(Int64(i)))
            let m = message(outcome)
            #expect(outcome.failure != nil, "\(m)")
            if m.contains("\(silent.baseURL) is down") { down += 1 }
        }
        // The first six waited for their timeout; every later attempt was refused at once.
        #expect(down >= 12, "\(down) of 18 ended by the rule")
        let status = await h.downloader.status()
        #expect(status.hostsDown == [silent.baseURL])
        #expect(status.totals.attempts >= 18 + 12)
    }
}
