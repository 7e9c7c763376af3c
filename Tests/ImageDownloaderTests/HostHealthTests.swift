import Foundation
@testable import ImageDownloader
import Testing
import TestSupport

/// `HostHealth` as a value: no I/O, clock readings given.
@Suite struct HostHealthTests {
    typealias Health = HostHealth<Int>
    let rule = Health.Settings(failuresInARow: 3, downNs: 1_000)
    let refused = DownloadFailure.network(.connection, "connection refused while connecting to 127.0.0.1:9")

    /// Three connection failures in a row (attempts 0, 1, 2) at `now`: `host` is down.
    func makeDown(_ health: inout Health, _ host: String, now: UInt64) {
        for id in 0..<3 { _ = health.ended(id, host: host, .notReached(refused), now: now, settings: rule) }
    }

    /// `host` down since 0, its probe (attempt 10) let through at `now`.
    func probing(_ host: String, since now: UInt64) -> Health {
        var health = Health()
        makeDown(&health, host, now: 0)
        #expect(health.admit(10, host: host, now: now, settings: rule) == .probe(holdsOthers: true))
        return health
    }

    func isRefusal(_ admission: Health.Admission) -> Bool {
        if case .refuse = admission { return true } else { return false }
    }

    @Test func downAfterFailuresInARowThenOneProbeWhenTheTimeIsUp() {
        var health = Health()
        let host = "http://127.0.0.1:9"
        for id in 1...2 {
            #expect(health.admit(id, host: host, now: 0, settings: rule) == .go)
            let change = health.ended(id, host: host, .notReached(refused), now: 10, settings: rule)
            #expect(change == .none)
        }
        #expect(health.admit(3, host: host, now: 10, settings: rule) == .go, "two failures: not down yet")
        #expect(health.downHosts.isEmpty)
        let third = health.ended(3, host: host, .notReached(refused), now: 20, settings: rule)
        #expect(third == .hold(until: 1_020), "the third makes it down: its downloads wait")
        #expect(health.downHosts == [host])

        // An attempt that did not wait in the queue (a retry keeping its slot) ends at once.
        guard case .refuse(let failure) = health.admit(4, host: host, now: 500, settings: rule) else {
            Issue.record("a down host's attempt went")
            return
        }
        guard case .network(.hostDown, let message) = failure else {
            Issue.record("not a hostDown failure: \(failure)")
            return
        }
        #expect(message.contains("\(host) is down: 3 attempts in a row could not connect or got no answer"), "\(message)")
        #expect(message.contains("connection refused while connecting to 127.0.0.1:9"), "\(message)")
        #expect(message.contains("not tried again for 1 s"), "\(message)")
        #expect(!failure.isTransient && !failure.isConnectionFailure && !failure.blocksURL, "not retried, not counted, not blocking")

        // Time is up: one probe; any other attempt meanwhile ends at once.
        #expect(health.admit(5, host: host, now: 1_020, settings: rule) == .probe(holdsOthers: true))
        #expect(health.admit(5, host: host, now: 1_021, settings: rule) == .probe(holdsOthers: true), "the probe's own next attempt")
        guard case .refuse(let meanwhile) = health.admit(6, host: host, now: 1_030, settings: rule) else {
            Issue.record("a second attempt went while the probe was out")
            return
        }
        #expect(meanwhile.description.contains("one attempt is trying whether it is back"), "\(meanwhile)")

        // The probe fails: given up, the waiting downloads end; down for another period.
        let probeFailed = health.ended(5, host: host, .notReached(refused), now: 1_100, settings: rule)
        #expect(probeFailed == .gaveUp)
        guard case .refuse(let givenUp) = health.admit(7, host: host, now: 2_000, settings: rule) else {
            Issue.record("a given-up host's attempt went")
            return
        }
        #expect(givenUp.description.contains("4 attempts in a row could not connect or got no answer") && givenUp.description.contains("and again after a wait"), "\(givenUp)")
        // The next period's probe fails too (the others end at once meanwhile: nothing waits).
        #expect(health.admit(7, host: host, now: 2_100, settings: rule) == .probe(holdsOthers: false))
        #expect(isRefusal(health.admit(70, host: host, now: 2_110, settings: rule)))
        let again = health.ended(7, host: host, .notReached(refused), now: 2_150, settings: rule)
        #expect(again == .gaveUp)
        // It reaches the host: back, with a fresh count.
        #expect(health.admit(8, host: host, now: 3_150, settings: rule) == .probe(holdsOthers: false))
        let back = health.ended(8, host: host, .reached, now: 3_160, settings: rule)
        #expect(back == .back)
        #expect(health.downHosts.isEmpty)
        for id in 9...10 {
            #expect(health.admit(id, host: host, now: 3_200, settings: rule) == .go)
            _ = health.ended(id, host: host, .notReached(refused), now: 3_200, settings: rule)
        }
        #expect(health.admit(11, host: host, now: 3_200, settings: rule) == .go, "two failures since it came back")
    }

    /// Within the wait, failed probes keep the downloads waiting for the next, 1, 2, 4… apart
    /// (never past the wait's end); the first to fail after it gives the host up.
    @Test func probesBackOffWithinTheWaitThenTheHostIsGivenUp() {
        let rule = Health.Settings(failuresInARow: 2, downNs: 10_000, firstProbeNs: 1_000)
        var health = Health()
        let host = "http://h:80"
        _ = health.ended(0, host: host, .notReached(refused), now: 0, settings: rule)
        let down = health.ended(1, host: host, .notReached(refused), now: 100, settings: rule)
        #expect(down == .hold(until: 1_100))
        var now: UInt64 = 1_100
        var holds: [UInt64] = []
        for id in 10..<20 {
            #expect(health.admit(id, host: host, now: now, settings: rule) == .probe(holdsOthers: true))
            now += 50  // the probe's own time
            let change = health.ended(id, host: host, .notReached(refused), now: now, settings: rule)
            guard case .hold(let until) = change else {
                #expect(change == .gaveUp)
                #expect(now >= 100 + 10_000, "given up only after the wait")
                break
            }
            holds.append(until - now)
            now = until
        }
        #expect(holds == [2_000, 4_000, 2_850], "doubling, the last cut at the wait's end (10,100)")
        #expect(isRefusal(health.admit(30, host: host, now: now + 10, settings: rule)))
    }

    @Test func aProbeThatConnectsBringsTheWaitingDownloadsBack() {
        let host = "http://h:80"
        var health = probing(host, since: 1_000)
        let back = health.ended(10, host: host, .reached, now: 1_001, settings: rule)
        #expect(back == .back, "the queue lets the host's downloads go")
        #expect(health.admit(11, host: host, now: 1_002, settings: rule) == .go)
    }

    @Test func anAttemptThatReachesTheHostResetsItsCount() {
        var health = Health()
        let host = "https://example.invalid:443"
        for round in 0..<5 {
            for id in 0..<2 {
                #expect(health.admit(round * 10 + id, host: host, now: 0, settings: rule) == .go)
                _ = health.ended(round * 10 + id, host: host, .notReached(refused), now: 0, settings: rule)
            }
            let reached = health.ended(round * 10 + 5, host: host, .reached, now: 0, settings: rule)
            #expect(reached == .none, "it was not down")
        }
        #expect(health.downHosts.isEmpty, "never three in a row")
    }

    @Test func anAbandonedProbeLetsTheNextAttemptProbe() {
        let host = "http://h:80"
        var health = probing(host, since: 5_000)
        // Cancelled before it knew: the probe's answer never comes; the queue lets one more start.
        let lost = health.ended(10, host: host, .abandoned, now: 5_001, settings: rule)
        #expect(lost == .hold(until: 5_001))
        #expect(health.admit(11, host: host, now: 5_002, settings: rule) == .probe(holdsOthers: true))
        // Another attempt's abandonment leaves the probe alone.
        let other = health.ended(12, host: host, .abandoned, now: 5_003, settings: rule)
        #expect(other == .none)
        #expect(isRefusal(health.admit(13, host: host, now: 5_004, settings: rule)))
    }

    @Test func attemptsUnderWayWhenTheHostWentDownKeepItDown() {
        var health = Health()
        let host = "http://h:80"
        makeDown(&health, host, now: 100)
        // Three more that started before it was down, ending now: no new period.
        for id in 3..<6 {
            let change = health.ended(id, host: host, .notReached(refused), now: 200, settings: rule)
            #expect(change == .none)
        }
        #expect(health.admit(9, host: host, now: 1_100, settings: rule) == .probe(holdsOthers: true), "down from the first period's start")
        // One of them reaching the host brings it back, probe or not.
        let back = health.ended(6, host: host, .reached, now: 1_101, settings: rule)
        #expect(back == .back)
        #expect(health.admit(20, host: host, now: 1_102, settings: rule) == .go)
    }

    @Test func hostsAreApartAndZeroTurnsTheRuleOff() {
        var health = Health()
        makeDown(&health, "http://a:80", now: 0)
        #expect(isRefusal(health.admit(5, host: "http://a:80", now: 1, settings: rule)))
        #expect(health.admit(6, host: "http://b:80", now: 1, settings: rule) == .go)
        #expect(health.admit(7, host: "http://a:8080", now: 1, settings: rule) == .go, "another port is another host")
        let off = Health.Settings(failuresInARow: 0, downNs: 1_000)
        #expect(health.admit(8, host: "http://a:80", now: 1, settings: off) == .go, "turned off: even a down host goes")
        var fresh = Health()
        for id in 0..<50 { _ = fresh.ended(id, host: "http://c:80", .notReached(refused), now: 0, settings: off) }
        #expect(fresh.downHosts.isEmpty)
        health.removeAll()
        #expect(health.admit(9, host: "http://a:80", now: 1, settings: rule) == .go, "clearFailedURLs forgets it")
    }

    @Test func whichFailuresSayTheHostWasNotReached() {
        #expect(DownloadFailure.network(.connection, "").isConnectionFailure)
        #expect(!DownloadFailure.network(.dns, "").isConnectionFailure, "a name that does not resolve fails fast: not held")
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

    /// A harness that counts a host down after `downAfter` failures in a row, for `downMs` before
    /// its first probe, with `retries` retries and `perHost` downloads at a time per host.
    func hostHealthHarness(retries: Int, perHost: Int, downAfter: Int, downMs: Int64,
                           _ more: (inout DownloaderConfiguration) -> Void = { _ in })
        async throws -> DownloaderHarness {
        try await DownloaderHarness.make {
            $0.maxRetries = retries
            $0.maxConcurrentPerHost = perHost
            $0.hostDownAfter = downAfter
            $0.hostDownMs = downMs
            more(&$0)
        }
    }

    /// A harness whose ten downloads (tokens 0…9, `path(i)`) go to a port that refuses, one at a
    /// time and without retries: exactly three refusals come first.
    func tenToARefusingPort(hostDownMs: Int64, _ path: (Int) -> String) async throws -> (DownloaderHarness, RefusingPort) {
        let h = try await hostHealthHarness(retries: 0, perHost: 1, downAfter: 3, downMs: hostDownMs)
        let refusing = try RefusingPort()
        for i in 0..<10 { try await h.start(.int(Int64(i)), refusing.baseURL + path(i)) }
        return (h, refusing)
    }

    /// A host that refuses for a moment (a restart): after three refusals its downloads wait,
    /// taking no slot, and once it answers again the probe brings them back: none is lost.
    @Test func aHostBackWithinTheWaitLosesNothing() async throws {
        // (30 s: probes at 1, 3, 7, 15 s…; the server is up long before the first on any machine,
        // and a loaded CI machine, where this test once took 19 s, still has room.)
        let (h, refusing) = try await tenToARefusingPort(hostDownMs: 30_000) { "/files/back?n=\($0)" }
        defer { Task { await h.shutdown() } }
        let (port, base) = (refusing.port, refusing.baseURL)
        try await h.until("the host is down") { await h.downloader.status().hostsDown == [base] }
        // Back at once: the first probe comes 1 s after the host went down, and one that finds the
        // port still refusing fails its download (a loaded CI machine once took longer than that
        // to fetch the other host's file below first).
        refusing.close()
        let revived = try await TestHTTPServer.start(port: port)
        defer { Task { await revived.shutdown() } }
        revived.setFile("back", bytes(700))
        // A host that works is not held back meanwhile.
        h.server.setFile("ok", bytes(500))
        try await h.start(.string("good"), h.server.url("/files/ok"))
        #expect(try await h.outcome(.string("good")).value == 500)
        for i in 0..<3 { #expect(message(try await h.outcome(.int(Int64(i)))).contains("connection refused")) }
        for i in 3..<10 {
            let outcome = try await h.outcome(.int(Int64(i)))
            #expect(outcome.value == 700, "waited, then fetched: \(message(outcome))")
        }
        #expect(revived.hits("/files/back") == 7)
        #expect(await h.downloader.status().hostsDown.isEmpty)
    }

    /// A host still refusing when its wait is over: the probes fail (at 1 s, then at the wait's
    /// end, 2 s), and the downloads that waited, and new ones, end at once, until a later probe
    /// finds it back.
    @Test func aHostStillDownAfterTheWaitFailsItsDownloadsAtOnce() async throws {
        // (2 s: the five that end at once must all have ended within the next 2 s however loaded
        // the machine, or the last would be the next period's probe.)
        let (h, refusing) = try await tenToARefusingPort(hostDownMs: 2_000) { "/a\($0).jpg" }
        defer { Task { await h.shutdown() } }
        let (port, base) = (refusing.port, refusing.baseURL)
        var messages: [String] = []
        for i in 0..<10 { messages.append(message(try await h.outcome(.int(Int64(i))))) }
        // Three refusals, the two probes', then the rest at once.
        for m in messages.prefix(5) { #expect(m.contains("connection refused") && !m.contains("is down"), "\(m)") }
        for m in messages.dropFirst(5) {
            #expect(m.contains("\(base) is down: 5 attempts in a row could not connect or got no answer (the last: connection refused"), "\(m)")
            #expect(m.contains("and again after a wait"), "\(m)")
        }
        #expect(await h.downloader.status().hostsDown == [base])

        // The server comes up on that port: once the next wait is over, a download goes through as
        // the probe and the host is back. (Before that, each try fails at once.)
        refusing.close()
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
            try? await Task.sleep(for: .milliseconds(50))
            return false
        }
        #expect(await h.downloader.status().hostsDown.isEmpty)
        try await h.start(.string("after"), "\(base)/files/back?n=after")
        #expect(try await h.outcome(.string("after")).value == 700)
        #expect(revived.hits("/files/back") == 2, "one probe, then one download: the refused tries never reached it")
    }

    /// A proxy that cannot be reached says nothing of the hosts behind it: their downloads fail
    /// as the connection failures they are, at once, and no host is counted down.
    @Test func aDeadProxyIsNoHostsFailure() async throws {
        let proxy = try RefusingPort()
        defer { proxy.close() }
        let h = try await DownloaderHarness.make {
            $0.maxRetries = 0
            $0.hostDownAfter = 1
            $0.proxies.useForBoth(try? ProxySettings.Proxy.parse(proxy.baseURL))
        }
        defer { Task { await h.shutdown() } }
        for i in 0..<6 { try await h.start(.int(Int64(i)), h.server.url("/files/x?n=\(i)")) }
        for i in 0..<6 {
            let m = message(try await h.outcome(.int(Int64(i))))
            #expect(m.contains("connection refused") && m.contains("through the proxy") && !m.contains("is down"), "\(m)")
        }
        #expect(await h.downloader.status().hostsDown.isEmpty)
    }

    /// The case the rule is for: a host that drops every packet. Its first attempts wait for the
    /// timeout; then the host is down, its downloads wait without a slot while the other host's
    /// are fetched, and when the probe times out too they all end at once.
    @Test func aSilentHostsDownloadsEndOnceItIsDown() async throws {
        let h = try await hostHealthHarness(retries: 2, perHost: 6, downAfter: 3, downMs: 500) {
            $0.maxConcurrentDownloads = 6
        }
        defer { Task { await h.shutdown() } }
        let silent = try SilentHost()
        defer { silent.close() }
        h.server.setFile("ok", bytes(300))
        // The idle watchdog ends their connects (the good ones keep the harness's long timeout).
        for i in 0..<18 { try await h.start(.int(Int64(i)), "\(silent.baseURL)/a\(i).jpg") { $0.timeoutMs = 1_000 } }
        for i in 0..<12 { try await h.start(.string("good\(i)"), h.server.url("/files/ok?n=\(i)")) }
        for i in 0..<12 { #expect(try await h.outcome(.string("good\(i)")).value == 300) }
        var down = 0
        for i in 0..<18 {
            let outcome = try await h.outcome(.int(Int64(i)))
            let m = message(outcome)
            #expect(outcome.failure != nil, "\(m)")
            if m.contains("\(silent.baseURL) is down") { down += 1 }
        }
        // The first six waited for their timeout, one more probed; every other attempt ended at once.
        #expect(down >= 11, "\(down) of 18 ended by the rule")
        let status = await h.downloader.status()
        #expect(status.hostsDown == [silent.baseURL])
        #expect(status.totals.attempts >= 18 + 12)
    }
}
