import AsyncHTTPClient
import Foundation
import ImageDownloader
import Logging
import NIOCore
import Synchronization
import TestSupport

/// A downloader wired to the real HTTP loader and a recorder of its events.
final class DownloaderHarness: Sendable {
    let server: TestHTTPServer
    let downloader: Downloader<Int, Never>
    let clients: HTTPClients

    /// `route`: how the loader sends requests (nil: the default for this process's network
    /// threads, `async` where the machine has two CPUs or more, as the test process sets no count).
    static func make(
        _ configure: (inout DownloaderConfiguration) -> Void = { _ in }, fileRoot: String? = nil, cache: HTTPCache? = nil,
        route: HTTPExchange.Route? = nil, followers: Downloader<Int, Never>.FollowerMaker? = nil
    ) async throws -> DownloaderHarness {
        let server = try await TestHTTPServer.start()
        var configuration = DownloaderConfiguration(userAgent: "image-worker-tests/1")
        configuration.retryBaseDelayMs = 10
        configuration.retryMaxDelayMs = 2000
        // Generous: on a loaded two-core machine an attempt's task can wait long to run, and an
        // idle timeout must not fire for that (CONTRIBUTING.md says why the decoder tests run in
        // a process of their own). Tests about timeouts set their own.
        configuration.timeoutMs = 30_000
        configure(&configuration)
        return DownloaderHarness(
            server: server, configuration: configuration, fileRoot: fileRoot, cache: cache, route: route, followers: followers)
    }

    private init(server: TestHTTPServer, configuration: DownloaderConfiguration, fileRoot: String?, cache: HTTPCache?, route: HTTPExchange.Route?,
        followers: Downloader<Int, Never>.FollowerMaker?
    ) {
        self.server = server
        let clients = HTTPClients(
            logger: Logger(label: "tests-clients"), route: route ?? .forNetwork(loops: NIOSingletons.groupLoopCountSuggestion))
        self.clients = clients
        // The downloader's and AsyncHTTPClient's debug lines are kept (the last few hundred) and
        // shown only when a wait runs out, so that a stall explains itself (one did: an attempt
        // "idle for 30 s" whose request had reached a connection 2.4 s before).
        let log = LogCapture()
        self.log = log
        var logger = Logger(label: "tests") { label in LogCapture.Handler(label: label, capture: log) }
        logger.logLevel = .debug
        let recorder = Recorder()
        self.recorder = recorder
        downloader = Downloader(
            configuration: configuration,
            httpLoader: HTTPLoader(clients: clients, cookies: CookieJar(), logger: logger, cache: cache),
            fileURLPolicy: FileURLPolicy(root: fileRoot),
            logger: logger,
            followers: followers,
            discarded: { value in recorder.discarded.withLock { $0.append(value) } },
            sink: { recorder.append($0) })
    }

    let recorder: Recorder
    let log: LogCapture

    final class LogCapture: Sendable {
        static let kept = 300
        let lines = Mutex<[String]>([])

        func append(_ line: String) {
            lines.withLock {
                $0.append(line)
                if $0.count > Self.kept { $0.removeFirst($0.count - Self.kept) }
            }
        }

        struct Handler: LogHandler {
            let label: String
            let capture: LogCapture
            var logLevel: Logger.Level = .debug
            var metadata: Logger.Metadata = [:]

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                let all = metadata.merging(event.metadata ?? [:]) { $1 }
                let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                capture.append("\(Date().timeIntervalSince1970) \(event.level) \(event.message) \(fields)")
            }
        }
    }

    final class Recorder: Sendable {
        let events = Mutex<[DownloadEvent<Int, Never>]>([])
        /// What processors delivered for tokens that had ended meanwhile.
        let discarded = Mutex<[Int]>([])
        func append(_ e: DownloadEvent<Int, Never>) { events.withLock { $0.append(e) } }
    }

    var events: [DownloadEvent<Int, Never>] { recorder.events.withLock { $0 } }

    func events(_ token: DownloadToken) -> [DownloadEvent<Int, Never>] { events.filter { $0.token == token } }

    /// Starts a download whose processor answers the body's size.
    func start(_ token: DownloadToken, _ url: String, priority: DownloadPriority = .normal,
               _ adjust: (inout DownloadRequest) -> Void = { _ in }) async throws {
        var request = DownloadRequest(token: token, url: url, priority: priority)
        adjust(&request)
        try await downloader.reserve(token, url: url, priority: priority)
        await downloader.start(request) { resource, _ in resource.byteCount }
    }

    /// Waits for the token's terminal event (a liveness guard, not a timing assertion).
    @discardableResult
    func outcome(_ token: DownloadToken, timeout: Duration = .seconds(30)) async throws -> DownloadOutcome<Int, Never> {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for case .completed(let t, _, let outcome, _) in events where t == token { return outcome }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TimeoutError(token: token, events: events(token).map { "\($0)" }, log: log.lines.withLock { $0 })
    }

    /// Waits until `condition` holds.
    func until(_ what: String, timeout: Duration = .seconds(30), _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !(await condition()) {
            if ContinuousClock.now >= deadline { throw WaitError(what: what, log: log.lines.withLock { $0 }) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func started(_ token: DownloadToken) -> Bool {
        events.contains { if case .started(let t, _) = $0 { return t == token } else { return false } }
    }

    func shutdown() async {
        await downloader.cancelAll()
        await downloader.waitUntilIdle()
        await clients.shutdown()
        await server.shutdown()
    }

    struct TimeoutError: Error, CustomStringConvertible {
        let token: DownloadToken
        let events: [String]
        let log: [String]
        var description: String {
            "no terminal event for token \(token); its events: \(events)\nlast log lines:\n" + log.joined(separator: "\n")
        }
    }

    struct WaitError: Error, CustomStringConvertible {
        let what: String
        let log: [String]
        var description: String { "gave up waiting for \(what)\nlast log lines:\n" + log.joined(separator: "\n") }
    }
}

extension DownloadOutcome {
    var failure: DownloadFailure? { if case .failure(let f) = self { return f } else { return nil } }
    var value: Delivered? { if case .success(let v) = self { return v } else { return nil } }
    var isCancelled: Bool { if case .cancelled = self { return true } else { return false } }
}

func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}
