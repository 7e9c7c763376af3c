import Foundation
@testable import ImageDownloader
import Testing
import TestSupport

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(maxRetries: 5, baseDelayMs: 100, maxDelayMs: 1000)

    @Test func backoffDoublesWithinJitterBoundsAndIsCapped() {
        for retry in 1...6 {
            let ceiling = min(100 * (1 << (retry - 1)), 1000)
            #expect(policy.delayMs(retry: retry, retryAfterSeconds: nil, jitter: 0) == Int64(ceiling / 2))
            #expect(policy.delayMs(retry: retry, retryAfterSeconds: nil, jitter: 0.999_999) == Int64(ceiling))
        }
    }

    @Test func retryAfterWinsWhenLongerButStaysUnderTheCap() {
        #expect(policy.delayMs(retry: 1, retryAfterSeconds: 0.5, jitter: 0) == 500)
        #expect(policy.delayMs(retry: 1, retryAfterSeconds: 60, jitter: 0) == 1000)
    }

    @Test func parsesRetryAfterSecondsAndDates() {
        #expect(RetryPolicy.parseRetryAfter("3") == 3)
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        #expect(RetryPolicy.parseRetryAfter("Sun, 09 Sep 2001 01:46:50 GMT", now: now) == 10)
        #expect(RetryPolicy.parseRetryAfter("soon") == nil)
    }

    @Test func classifiesFailures() {
        #expect(DownloadFailure.statusCode(503, retryAfterSeconds: nil).isTransient)
        #expect(DownloadFailure.statusCode(429, retryAfterSeconds: 1).isTransient)
        #expect(!DownloadFailure.statusCode(404, retryAfterSeconds: nil).isTransient)
        #expect(!DownloadFailure.statusCode(408, retryAfterSeconds: nil).isTransient, "4xx other than 429 is never retried")
        #expect(DownloadFailure.network(.timeout, "").isTransient)
        #expect(!DownloadFailure.network(.tls, "").isTransient)
        #expect(DownloadFailure.statusCode(404, retryAfterSeconds: nil).blocksURL)
        #expect(!DownloadFailure.statusCode(503, retryAfterSeconds: nil).blocksURL)
        #expect(!DownloadFailure.network(.connection, "").blocksURL)
        #expect(!DownloadFailure.limitExceeded(.bodyBytes, limit: 1, actual: 2).blocksURL)
    }
}

@Suite struct ProgressThrottleTests {
    @Test func firstAndLastAlwaysGoOut() {
        let t = ProgressThrottle(minimumFraction: 0.5, minimumIntervalNanos: 1_000_000_000)
        #expect(t.shouldReport(received: 1, expected: 100, lastReportedBytes: 0, lastReportedAt: 0, now: 0))
        #expect(t.shouldReport(received: 100, expected: 100, lastReportedBytes: 99, lastReportedAt: 0, now: 0))
        #expect(!t.shouldReport(received: 50, expected: 100, lastReportedBytes: 50, lastReportedAt: 0, now: 5_000_000_000))
    }

    @Test func bothFractionAndTimeMustHavePassed() {
        let t = ProgressThrottle(minimumFraction: 0.1, minimumIntervalNanos: 100)
        #expect(!t.shouldReport(received: 15, expected: 100, lastReportedBytes: 10, lastReportedAt: 0, now: 1000), "fraction too small")
        #expect(!t.shouldReport(received: 30, expected: 100, lastReportedBytes: 10, lastReportedAt: 0, now: 50), "too soon")
        #expect(t.shouldReport(received: 30, expected: 100, lastReportedBytes: 10, lastReportedAt: 0, now: 100))
        #expect(t.shouldReport(received: 30, expected: nil, lastReportedBytes: 10, lastReportedAt: 0, now: 100), "no fraction without a length")
    }
}

@Suite struct FailedURLListTests {
    @Test func blocksUntilExpiry() {
        var list = FailedURLList()
        list.record("http://x/a", reason: "404", now: 100, expiryNanos: 50)
        #expect(list.blocking("http://x/a", now: 120)?.reason == "404")
        #expect(list.blocking("http://x/b", now: 120) == nil)
        #expect(list.blocking("http://x/a", now: 150) == nil)
        #expect(list.count == 0)
    }

    /// A million dead URLs hold what the capacity does: the oldest go first, a URL recorded again
    /// counts from its new record, a removed one is not counted; every record is as cheap as the
    /// first (this runs in well under a second; the list was once purged whole past 10,000).
    @Test func keepsTheNewestUpToItsCapacity() {
        var list = FailedURLList(capacity: 100)
        for n in 0..<1_000_000 { list.record("http://x/\(n)", reason: "404", now: 0, expiryNanos: 1_000) }
        #expect(list.count == 100)
        #expect(list.blocking("http://x/999899", now: 1) == nil && list.blocking("http://x/999900", now: 1) != nil)
        list.record("http://x/999900", reason: "410", now: 1, expiryNanos: 1_000)  // again: now the newest
        list.remove("http://x/999950")
        for n in 0..<99 { list.record("http://y/\(n)", reason: "404", now: 2, expiryNanos: 1_000) }
        #expect(list.count == 100)
        #expect(list.blocking("http://x/999900", now: 3)?.reason == "410" && list.blocking("http://x/999999", now: 3) == nil)
        #expect(list.blocking("http://y/0", now: 3) != nil && list.blocking("http://y/98", now: 3) != nil)
    }
}

@Suite struct CookieJarTests {
    @Test func storesAndSendsMatchingCookies() {
        let jar = CookieJar()
        let url = URL(string: "http://example.test/images/a.png")!
        jar.store(setCookieHeaders: ["s=1; Path=/", "t=2", "u=3; Domain=example.test; Path=/images", "x=9; Domain=other.test"], from: url)
        #expect(jar.header(for: URL(string: "http://example.test/images/b.png")!) == "t=2; u=3; s=1", "longer paths first, then creation order")
        #expect(jar.header(for: URL(string: "http://example.test/other")!) == "s=1")
        #expect(jar.header(for: URL(string: "http://cdn.example.test/images/x")!) == "u=3", "domain cookie reaches subdomains")
        #expect(jar.header(for: URL(string: "http://other.test/")!) == nil, "a cookie for another site is refused")
    }

    @Test func expiryDeletionAndSecure() {
        let jar = CookieJar()
        let url = URL(string: "https://h.test/")!
        let now = Date()
        jar.store(setCookieHeaders: ["a=1; Max-Age=60", "b=2; Secure", "c=3; Max-Age=1"], from: url, now: now)
        #expect(jar.header(for: url, now: now) == "a=1; b=2; c=3")
        #expect(jar.header(for: URL(string: "http://h.test/")!, now: now) == "a=1; c=3", "secure cookies only over https")
        #expect(jar.header(for: url, now: now.addingTimeInterval(5)) == "a=1; b=2")
        jar.store(setCookieHeaders: ["a=; Max-Age=0"], from: url, now: now)
        #expect(jar.header(for: url, now: now) == "b=2")
    }
}

@Suite struct FileURLPolicyTests {
    @Test func refusesWithoutARootAndOutsideIt() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("iw-root-\(UUID().uuidString)")
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("iw-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: outside)
        }
        try Data([1]).write(to: root.appendingPathComponent("sub/ok.png"))
        try Data([2]).write(to: outside.appendingPathComponent("secret.png"))
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("link.png"), withDestinationURL: outside.appendingPathComponent("secret.png"))

        #expect(throws: DownloadFailure.self) { try FileURLPolicy(root: nil).resolve(root.appendingPathComponent("sub/ok.png")) }
        let policy = FileURLPolicy(root: root.path)
        #expect(try policy.resolve(root.appendingPathComponent("sub/ok.png")).hasSuffix("/sub/ok.png"))
        for escape in ["sub/../../\(outside.lastPathComponent)/secret.png", "link.png"] {
            do {
                _ = try policy.resolve(URL(fileURLWithPath: root.path + "/" + escape))
                Issue.record("\(escape) was allowed")
            } catch {
                guard case .invalidOperation = error else { Issue.record("\(escape): \(error)"); continue }
            }
        }
        #expect(throws: DownloadFailure.network(.io, "no such file: \(root.path)/missing.png")) {
            try policy.resolve(URL(fileURLWithPath: root.path + "/missing.png"))
        }
    }
}

@Suite struct HTTPDateTests {
    /// The IMF-fixdate fast path reads what a DateFormatter writes, for dates across two centuries.
    @Test func theFastPathAgreesWithDateFormatter() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var rng = SplitMix(seed: 42)
        for _ in 0..<3000 {
            let seconds = Double(rng.next() % 4_102_444_800)  // 1970 ... 2100
            let text = formatter.string(from: Date(timeIntervalSince1970: seconds))
            #expect(HTTPDate.imfFixdate(text)?.timeIntervalSince1970 == seconds, "\(text)")
        }
        #expect(HTTPDate.imfFixdate("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
        #expect(HTTPDate.imfFixdate("Sun, 06 Nov 1994 08:49:37 UTC") == nil)
        #expect(HTTPDate.imfFixdate("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") != nil, "the obsolete forms still parse")
    }
}
