import Foundation
import ImageDownloader
import Logging
import Synchronization
import Testing
import TestSupport

/// RFC 9111's rules as the cache applies them, without I/O.
@Suite struct CachedResponseTests {
    static let now = 1_700_000_000.0

    func response(_ headers: [(String, String)], requestTime: Double = now - 10, responseTime: Double = now - 10) -> CachedResponse {
        CachedResponse(
            url: "http://x/a", status: 200, headers: headers, requestTime: requestTime, responseTime: responseTime, vary: [:],
            httpVersion: "1.1", bodyBytes: 1)
    }

    func date(_ offset: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: Self.now + offset))
    }

    @Test func freshnessComesFromMaxAgeThenExpiresThenLastModified() {
        #expect(response([("Cache-Control", "public, max-age=60"), ("Expires", date(3600))]).freshnessLifetime == 60)
        #expect(response([("Date", date(-10)), ("Expires", date(3590))]).freshnessLifetime == 3600)
        #expect(response([("Expires", "0")]).freshnessLifetime == 0, "an invalid date is already expired")
        #expect(response([("Date", date(-10)), ("Last-Modified", date(-10 - 1000))]).freshnessLifetime == 100, "a tenth of its age")
        #expect(response([("Date", date(0)), ("Last-Modified", date(-365 * 86_400))]).freshnessLifetime == 7 * 86_400, "at most a week")
        #expect(response([("Cache-Control", "max-age=5, max-age=500")]).freshnessLifetime == 0, "a duplicate max-age is stale")
        #expect(response([]).freshnessLifetime == 0)
    }

    @Test func ageCountsTheAgeHeaderTheDelayAndTheTimeSince() {
        let r = response([("Date", date(-20)), ("Age", "30"), ("Cache-Control", "max-age=100")], requestTime: Self.now - 12, responseTime: Self.now - 10)
        // max(apparent 10, 30 + 2) + resident 10
        #expect(r.currentAge(now: Self.now) == 42)
        #expect(r.isFresh(now: Self.now, requestHeaders: []))
        #expect(!r.isFresh(now: Self.now + 60, requestHeaders: []))
        #expect(!r.isFresh(now: Self.now, requestHeaders: [("Cache-Control", "no-cache")]), "the request can ask to revalidate")
        #expect(!r.isFresh(now: Self.now, requestHeaders: [("Cache-Control", "max-age=10")]))
        #expect(!response([("Cache-Control", "max-age=100, no-cache")]).isFresh(now: Self.now, requestHeaders: []))
    }

    @Test func whatMayBeStored() {
        func storable(_ response: [(String, String)], _ request: [(String, String)] = [], credentials: Bool = false, status: Int = 200) -> Bool {
            CachedResponse.isStorable(status: status, responseHeaders: response, requestHeaders: request, hasCredentials: credentials)
        }
        #expect(storable([]))
        #expect(!storable([], status: 206))
        #expect(!storable([("Cache-Control", "max-age=60, no-store")]))
        #expect(!storable([], [("Cache-Control", "no-store")]))
        #expect(!storable([("Vary", "Accept, *")]))
        #expect(storable([("Cache-Control", "private")]), "this cache is private")
        #expect(!storable([("Cache-Control", "private")], credentials: true))
        #expect(!storable([], credentials: true), "with credentials only what says public")
        #expect(!storable([], [("Authorization", "Bearer x")]))
        #expect(storable([("Cache-Control", "public, max-age=60")], credentials: true))
    }

    @Test func varyAndRevalidation() {
        let vary = CachedResponse.varyValues(responseHeaders: [("Vary", "Accept-Language, X-None")], requestHeaders: [("accept-language", "en")])
        var r = response([("ETag", "\"v1\""), ("Last-Modified", date(-99)), ("Content-Length", "1"), ("Cache-Control", "max-age=0")])
        r.vary = vary
        #expect(r.matches(requestHeaders: [("Accept-Language", "en")]))
        #expect(!r.matches(requestHeaders: [("Accept-Language", "fr")]))
        #expect(!r.matches(requestHeaders: [("Accept-Language", "en"), ("X-None", "1")]))
        #expect(r.conditionalHeaders.map(\.0) == ["If-None-Match", "If-Modified-Since"])
        let refreshed = r.refreshed(
            with: [("Cache-Control", "max-age=300"), ("Content-Length", "0"), ("ETag", "\"v1\"")], requestTime: Self.now, responseTime: Self.now)
        #expect(refreshed.header("Cache-Control") == "max-age=300")
        #expect(refreshed.header("Content-Length") == "1", "a 304's framing headers are not the body's")
        #expect(refreshed.isFresh(now: Self.now + 10, requestHeaders: []))
    }
}

/// The cache on disk under real downloads from a loopback server.
@Suite struct HTTPCacheTests {
    final class Setup: Sendable {
        let directory: String
        let cache: HTTPCache
        let h: DownloaderHarness

        init(maxBytes: Int64 = 1 << 30, _ configure: @escaping @Sendable (inout DownloaderConfiguration) -> Void = { _ in }) async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-cache-\(UUID().uuidString)").path
            cache = try HTTPCache(directory: directory, maxBytes: maxBytes, logger: Logger(label: "cache-tests"))
            h = try await DownloaderHarness.make(configure, cache: cache)
        }

        func finish() async {
            await h.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }

        let counter = Mutex(0)

        /// Downloads `path`; returns its size and where it came from.
        func get(_ path: String, policy: CachePolicy = .default, headers: [(String, String)] = [], credentials: Credentials? = nil) async throws
            -> (bytes: Int?, cache: CacheUse?, failure: DownloadFailure?)
        {
            let n = counter.withLock { $0 += 1; return $0 }
            let token = DownloadToken.int(Int64(n))
            try await h.start(token, h.server.url(path)) {
                $0.cachePolicy = policy
                $0.headers = headers
                $0.credentials = credentials
            }
            let outcome = try await h.outcome(token)
            let use = h.events(token).compactMap { e -> CacheUse? in if case .response(_, _, let i) = e { return i.cache } else { return nil } }.first
            return (outcome.value, use, outcome.failure)
        }
    }

    @Test func aFreshResponseIsServedWithNoRequest() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("a", bytes(150_000))
        let path = "/files/a?cc=max-age%3D3600"
        #expect(try await s.get(path) == (150_000, CacheUse.none, nil))
        #expect(try await s.get(path) == (150_000, .stored, nil))
        #expect(s.h.server.hits("/files/a") == 1)
    }

    /// A host that is down (`hostDownAfter`) still has its stored responses: a fresh one, and
    /// `cacheOnly`'s answer, come without waiting for it; a miss waits, probes, and once the host
    /// is given up the next miss ends at once.
    @Test func aDownHostsStoredResponsesStillAnswer() async throws {
        let s = try await Setup {
            $0.hostDownAfter = 1
            $0.hostDownMs = 1_000  // one probe, at 1 s, ends the wait; given up for 1 s after it
            $0.maxRetries = 0
        }
        defer { Task { await s.finish() } }
        s.h.server.setFile("kept", bytes(9_000))
        let path = "/files/kept?cc=max-age%3D3600"
        #expect(try await s.get(path) == (9_000, CacheUse.none, nil))
        await s.h.server.shutdown()  // its port now refuses
        // (A first request may go out on the pool's connection to the server that just closed:
        // that reached it. The next is refused.)
        var n = 0
        try await s.h.until("the host is down") {
            n += 1
            let failure = try? await s.get("/files/other\(n)").failure
            #expect(failure != nil)
            return await s.h.downloader.status().hostsDown == [s.h.server.baseURL]
        }
        #expect(try await s.get(path) == (9_000, .stored, nil))
        #expect(try await s.get(path, policy: .preferCache) == (9_000, .stored, nil))
        #expect(try await s.get("/files/missing", policy: .cacheOnly).failure?.description.contains("no cached copy") == true)
        #expect(try await s.get("/files/probe").failure?.description.contains("connection refused") == true, "the probe")
        guard case .network(.hostDown, _)? = try await s.get("/files/missing").failure else {
            Issue.record("a miss of a given-up host was tried")
            return
        }
        #expect(try await s.get(path) == (9_000, .stored, nil), "given up: the cache still answers")
    }

    @Test func aStaleResponseIsRevalidatedAndA304ServesIt() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("b", bytes(80_000))
        let path = "/files/b?cc=no-cache&etag=1"
        #expect(try await s.get(path).cache == CacheUse.none)
        #expect(try await s.get(path) == (80_000, .revalidated, nil))
        #expect(s.h.server.lastHeaders("/files/b").contains { $0.0.lowercased() == "if-none-match" })
        #expect(s.h.server.hits("/files/b") == 2)
        // Changed on the server: the new body replaces the entry.
        s.h.server.setFile("b", bytes(60_000, seed: 9))
        #expect(try await s.get(path) == (60_000, CacheUse.none, nil))
        #expect(try await s.get(path) == (60_000, .revalidated, nil))
        // Last-Modified alone revalidates with If-Modified-Since.
        s.h.server.setFile("c", bytes(1000))
        _ = try await s.get("/files/c?cc=max-age%3D0&lm=1")
        #expect(try await s.get("/files/c?cc=max-age%3D0&lm=1").cache == .revalidated)
        #expect(s.h.server.lastHeaders("/files/c").contains { $0.0.lowercased() == "if-modified-since" })
    }

    @Test func heuristicFreshnessFromLastModified() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("h", bytes(1000))
        _ = try await s.get("/files/h?lm=1")
        #expect(try await s.get("/files/h?lm=1").cache == .stored, "a day-old Last-Modified keeps it fresh for hours")
    }

    @Test func noStorePrivateWithCredentialsAndVary() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("n", bytes(1000))
        _ = try await s.get("/files/n?cc=no-store")
        #expect(try await s.get("/files/n?cc=no-store").cache == CacheUse.none)
        let user = Credentials(user: "u", password: "p")
        _ = try await s.get("/files/n?cc=private,max-age%3D60", credentials: user)
        #expect(try await s.get("/files/n?cc=private,max-age%3D60", credentials: user).cache == CacheUse.none)
        _ = try await s.get("/files/n?cc=public,max-age%3D60", credentials: user)
        #expect(try await s.get("/files/n?cc=public,max-age%3D60", credentials: user).cache == .stored)
        let vary = "/files/n?cc=max-age%3D60&vary=Accept-Language"
        _ = try await s.get(vary, headers: [("Accept-Language", "en")])
        #expect(try await s.get(vary, headers: [("Accept-Language", "en")]).cache == .stored)
        #expect(try await s.get(vary, headers: [("Accept-Language", "fr")]).cache == CacheUse.none, "another variant")
        #expect(try await s.get(vary, headers: [("Accept-Language", "fr")]).cache == .stored)
    }

    @Test func cachePolicies() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("p", bytes(5000))
        let path = "/files/p?cc=max-age%3D0"  // stored, always stale, no validator
        #expect(try await s.get(path, policy: .cacheOnly).failure == .network(.notCached, "no cached copy of \(s.h.server.url(path)) (cachePolicy cacheOnly)"))
        #expect(s.h.server.hits("/files/p") == 0, "cacheOnly never touches the network")
        _ = try await s.get(path)
        #expect(try await s.get(path).cache == CacheUse.none, "stale without validators: loaded again")
        #expect(try await s.get(path, policy: .preferCache).cache == .stored, "any stored copy")
        #expect(try await s.get(path, policy: .cacheOnly).cache == .stored)
        let before = s.h.server.hits("/files/p")
        s.h.server.setFile("q", bytes(5000))
        _ = try await s.get("/files/q?cc=max-age%3D600")
        #expect(try await s.get("/files/q?cc=max-age%3D600", policy: .reload).cache == CacheUse.none)
        #expect(s.h.server.hits("/files/p") == before)
        // The caller's own conditional request is left to the caller: its 304 is CacheNotModified.
        s.h.server.setFile("r", bytes(100))
        _ = try await s.get("/files/r?etag=1&cc=max-age%3D0")
        let etag = try #require(s.cache.lookup(s.h.server.url("/files/r?etag=1&cc=max-age%3D0"))?.response.header("ETag"))
        #expect(try await s.get("/files/r?etag=1&cc=max-age%3D0", headers: [("If-None-Match", etag)]).failure == .notModified)
    }

    @Test func truncatedBodiesAndDamagedFilesAreNeverServed() async throws {
        let s = try await Setup { $0.maxRetries = 0 }
        defer { Task { await s.finish() } }
        s.h.server.setFile("t", bytes(50_000))
        #expect(try await s.get("/files/t?cc=max-age%3D600&shortBy=100").failure != nil)
        #expect(try await s.get("/files/t?cc=max-age%3D600&shortBy=100", policy: .cacheOnly).failure?.last == .network(.notCached, "no cached copy of \(s.h.server.url("/files/t?cc=max-age%3D600&shortBy=100")) (cachePolicy cacheOnly)"))
        // A file damaged on disk (cut short) is removed and fetched again.
        _ = try await s.get("/files/t?cc=max-age%3D600")
        let url = s.h.server.url("/files/t?cc=max-age%3D600")
        let stored = try #require(s.cache.lookup(url))
        let file = FileHandle(forUpdatingAtPath: stored.path)
        try file?.truncate(atOffset: 1000)
        try file?.close()
        #expect(s.cache.lookup(url) == nil)
        #expect(try await s.get("/files/t?cc=max-age%3D600") == (50_000, CacheUse.none, nil))
        #expect(try await s.get("/files/t?cc=max-age%3D600").cache == .stored)
    }

    @Test func aResumedBodyIsStoredWhole() async throws {
        let s = try await Setup {
            $0.maxRetries = 4
            $0.retryBaseDelayMs = 1
            $0.retryMaxDelayMs = 5
        }
        defer { Task { await s.finish() } }
        var rng = SplitMix(seed: 99)
        let body = rng.bytes(700_000)
        s.h.server.setFile("r", body)
        let path = "/files/r?ranges=1&drops=2&seed=3&cc=max-age%3D600"
        #expect(try await s.get(path) == (700_000, CacheUse.none, nil))
        #expect(s.h.server.hits("/files/r") == 3, "cut twice, resumed twice")
        let entry = try #require(s.cache.lookup(s.h.server.url(path)), "the entry the broken attempt began, finished by the resumed ones")
        #expect(entry.response.bodyBytes == 700_000)
        var stored: [UInt8] = []
        try await entry.readBody { stored += Array($0.readableBytesView) }
        #expect(stored == body)
        #expect(try await s.get(path, policy: .cacheOnly) == (700_000, .stored, nil))
    }

    @Test func leastRecentlyUsedEntriesGoFirst() async throws {
        let s = try await Setup(maxBytes: 260_000)
        defer { Task { await s.finish() } }
        for name in ["x", "y", "z"] { s.h.server.setFile(name, bytes(100_000)) }
        _ = try await s.get("/files/x?cc=max-age%3D600")
        try await Task.sleep(for: .milliseconds(20))
        _ = try await s.get("/files/y?cc=max-age%3D600")
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await s.get("/files/x?cc=max-age%3D600").cache == .stored, "x used again: y is now the oldest")
        try await Task.sleep(for: .milliseconds(20))
        _ = try await s.get("/files/z?cc=max-age%3D600")
        #expect(s.cache.lookup(s.h.server.url("/files/x?cc=max-age%3D600")) != nil)
        #expect(s.cache.lookup(s.h.server.url("/files/y?cc=max-age%3D600")) == nil)
        #expect(s.cache.lookup(s.h.server.url("/files/z?cc=max-age%3D600")) != nil)
        #expect(s.cache.usage().bytes <= 260_000)
        s.cache.setMaxBytes(0)
        #expect(s.cache.usage().entries == 0)
    }

    // MARK: A hostile cache folder (anyone who can write a shared one)

    /// A file outside the cache that must survive whatever is planted inside it.
    private func victim() throws -> (folder: String, file: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("iw-victim-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = folder + "/precious"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 1, count: 50_000)))
        // Old enough for the start-up cleanup of stale temporary files.
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, file, &times, 0)
        return (folder, file)
    }

    @Test func evictionNeverFollowsALinkPlantedAmongTheEntries() async throws {
        let s = try await Setup(maxBytes: 150_000)
        defer { Task { await s.finish() } }
        let (folder, file) = try victim()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createSymbolicLink(atPath: s.directory + "/v1/entries/zz", withDestinationPath: folder)
        // An entry's own name as a link to the file, too.
        try FileManager.default.createDirectory(atPath: s.directory + "/v1/entries/aa", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: s.directory + "/v1/entries/aa/" + String(repeating: "a", count: 64), withDestinationPath: file)
        for name in ["x", "y"] { s.h.server.setFile(name, bytes(100_000)) }
        _ = try await s.get("/files/x?cc=max-age%3D600")
        _ = try await s.get("/files/y?cc=max-age%3D600")  // over the limit: eviction runs
        s.cache.setMaxBytes(0)
        #expect(FileManager.default.fileExists(atPath: file), "nothing outside the cache is removed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)).count == 50_000)
    }

    @Test func theStartUpCleanupNeverFollowsALinkedTmp() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iw-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (folder, file) = try victim()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: directory + "/v1/entries", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory + "/v1/tmp", withDestinationPath: folder)
        #expect(throws: (any Error).self, "a tmp that is a link: no cache") {
            _ = try HTTPCache(directory: directory, maxBytes: 1 << 20, logger: Logger(label: "cache-tests"))
        }
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test func aFIFOInPlaceOfAnEntryIsRemovedNotWaitedOn() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("f", bytes(1_000))
        let url = s.h.server.url("/files/f?cc=max-age%3D600")
        _ = try await s.get("/files/f?cc=max-age%3D600")
        let entry = try #require(s.cache.lookup(url)).path
        unlink(entry)
        #expect(mkfifo(entry, 0o644) == 0)
        // Would block for ever on open(O_RDONLY) without a writer.
        #expect(s.cache.lookup(url) == nil)
        #expect(!FileManager.default.fileExists(atPath: entry), "removed as damaged")
        let again = try await s.get("/files/f?cc=max-age%3D600")
        #expect(again.bytes == 1_000 && again.cache == CacheUse.none, "fetched again")
    }

    @Test func aResponseLargerThanTheCacheIsNotStoredAndEvictsNothing() async throws {
        let s = try await Setup(maxBytes: 150_000)
        defer { Task { await s.finish() } }
        s.h.server.setFile("small", bytes(10_000))
        s.h.server.setFile("huge", bytes(400_000))
        _ = try await s.get("/files/small?cc=max-age%3D600")
        let huge = try await s.get("/files/huge?cc=max-age%3D600")
        #expect(huge.bytes == 400_000, "delivered all the same")
        #expect(s.cache.lookup(s.h.server.url("/files/huge?cc=max-age%3D600")) == nil)
        #expect(s.cache.lookup(s.h.server.url("/files/small?cc=max-age%3D600")) != nil, "one hostile server cannot wipe the cache")
    }

    @Test func varyValuesAreStoredAsDigests() async throws {
        let s = try await Setup()
        defer { Task { await s.finish() } }
        s.h.server.setFile("v", bytes(1_000))
        let path = "/files/v?cc=public%2C%20max-age%3D600&vary=Authorization%2C%20Cookie"
        _ = try await s.get(path, headers: [("Authorization", "Bearer s3cr3t-token"), ("Cookie", "session=s3cr3t-cookie")])
        let entry = try #require(s.cache.lookup(s.h.server.url(path)))
        let stored = try Data(contentsOf: URL(fileURLWithPath: entry.path))
        #expect(stored.range(of: Data("s3cr3t".utf8)) == nil, "no header value in the folder")
        #expect(entry.response.matches(requestHeaders: [("Authorization", "Bearer s3cr3t-token"), ("Cookie", "session=s3cr3t-cookie")]))
        #expect(!entry.response.matches(requestHeaders: [("Authorization", "Bearer other"), ("Cookie", "session=s3cr3t-cookie")]))
    }
}
