import ImageDownloader
import ImageWorkerProtocol
import Logging

/// The worker behind stdin/stdout: JSON-RPC requests in, downloader calls and events out, and the
/// process's life (stdin EOF, `shutdown`/`exit`, signals, a vanished reader).
public final class WorkerServer: Sendable {
    public static let version = "0.1.0"
    /// The CPUs this process may use: its affinity mask, at most its cgroup's CPU quota (the
    /// delivery stage's default concurrency).
    public static var availableCPUs: Int { DecodeSlots.defaultConcurrency }

    struct SessionState {
        var lifecycle = ServerLifecycle()
        /// The stop `exit` planned, performed once its reply (if any) is sent.
        var exitPlan: ServerLifecycle.StopPlan?
        /// `download` request ids of live tokens, for `$/cancelRequest`.
        var tokenByRequest: [RPCId: DownloadToken] = [:]
        var requestByToken: [DownloadToken: RPCId] = [:]
    }

    private enum LifecycleEvent: Sendable {
        case terminate
        case clientGone
        /// The writer's `backedUp` may have changed.
        case outputPressure
    }

    public let options: WorkerOptions
    public let writer: WireWriter
    /// Where protocol messages go (watched for a reader that goes away).
    private let wireFD: Int32
    public let downloader: Downloader<JSONObject, DeliveryFailure>
    /// The shared HTTP client, when the worker made its own loader.
    let httpClients: HTTPClients?
    /// The HTTP cache on disk (`--cache-dir`), if any.
    let httpCache: HTTPCache?
    let logger: Logger
    let session = LockedState(SessionState())
    let decodeSettings: LockedState<DecodeSettings>
    let slots = DecodeSlots()
    /// Live downloads against `maxLiveDownloads`: the input loop waits for room.
    let backlog = DownloadBacklog()
    /// `delivery: "shared"`: the worker's folder in /dev/shm.
    let shared: SharedOutput
    /// What the tokens of each fetch share in the delivery stage (decodes, the progressive
    /// decoder, their targets).
    let deliveries: FetchDeliveries
    /// The last `download`'s output spec and its processor, shared by the next ones that ask
    /// for the same.
    let recentOutput = LockedState<OutputProcessor?>(nil)
    private let lifecycle: AsyncStream<LifecycleEvent>
    private let lifecycleContinuation: AsyncStream<LifecycleEvent>.Continuation

    /// - Parameters:
    ///   - wireFD: where protocol messages go (a private `dup` of the original stdout).
    ///   - httpLoader: what fetches `http(s)` URLs; by default one shared `HTTPClient` (tests
    ///     script bodies, stalls and failures with their own).
    public init(options: WorkerOptions, wireFD: Int32, logger: Logger, httpLoader: (any ResourceLoader)? = nil) {
        self.options = options
        self.logger = logger
        self.wireFD = wireFD
        let (lifecycle, continuation) = AsyncStream<LifecycleEvent>.makeStream()
        self.lifecycle = lifecycle
        self.lifecycleContinuation = continuation
        let writer = WireWriter(
            fd: wireFD, onClosed: { continuation.yield(.clientGone) }, onBackedUpChange: { continuation.yield(.outputPressure) })
        self.writer = writer
        let warnings = WorkerWarnings(logger: logger) { writer.send($0) }
        if !options.proxyProblems.isEmpty {
            let problems = options.proxyProblems.joined(separator: "; ")
            warnings.warn("proxySkipped", "proxy settings from the environment skipped: \(problems)", details: ["problems": problems])
        }
        var cache: HTTPCache? = nil
        if let directory = options.cacheDirectory {
            do {
                cache = try HTTPCache(directory: directory, maxBytes: options.configuration.cacheMaxBytes, logger: logger)
            } catch {
                logger.error("no HTTP cache: cannot use its directory", metadata: ["directory": "\(directory)", "error": "\(error)"])
            }
        }
        self.httpCache = cache
        let loader: any ResourceLoader
        if let httpLoader {
            loader = httpLoader
            self.httpClients = nil
        } else {
            let clients = HTTPClients(logger: logger, route: .forNetwork(loops: options.networkThreads))
            loader = HTTPLoader(clients: clients, cookies: CookieJar(), logger: logger, cache: cache)
            self.httpClients = clients
        }
        let session = self.session
        let backlog = self.backlog
        backlog.setLimit(DecodeSettings().maxLiveDownloads, suspended: options.configuration.suspended)
        let settings = LockedState(DecodeSettings())
        self.decodeSettings = settings
        let deliveries = FetchDeliveries(writer: writer, settings: settings, slots: slots)
        self.deliveries = deliveries
        let shared = SharedOutput(warnings: warnings)
        self.shared = shared
        var configuration = options.configuration
        settings.withLock { $0.sizeDeliveryStage(&configuration) }
        self.downloader = Downloader(
            configuration: configuration,
            httpLoader: loader,
            fileURLPolicy: FileURLPolicy(root: options.fileRoot),
            logger: logger,
            followers: { deliveries.makePipeline($0) },
            // A cancelled token's result in shared memory: nobody will take its file.
            discarded: { [shared] result in
                if result["shared"] == .bool(true), case .string(let path)? = result["path"] { shared.discard(path) }
            },
            sink: { event in
                let (message, replaceKey) = EventEncoder.encode(event)
                guard case .completed(let token, _, _, _) = event else {
                    writer.send(message, replaceKey: replaceKey)
                    return
                }
                // Atomically with the end of the token's partial images.
                deliveries.finish(token) { claimed in writer.send(message, settling: claimed) }
                backlog.ended()
                session.withLock { s in
                    if let id = s.requestByToken.removeValue(forKey: token) { s.tokenByRequest[id] = nil }
                }
            })
    }

    /// Asks the worker to stop as on SIGTERM: cancel everything, emit every terminal event,
    /// flush, exit 0. Safe to call from any thread.
    public func requestTermination() {
        lifecycleContinuation.yield(.terminate)
    }

    /// Serves until stdin ends, `exit` arrives, a termination is requested or the reader goes
    /// away. Returns the exit status.
    public func run(input: InputReader) async -> Int32 {
        // A reader that goes away is noticed at once, not at the next write (a silent download
        // writes nothing for its whole timeouts).
        let continuation = lifecycleContinuation
        let watch = ReaderWatch(fd: wireFD) { continuation.yield(.clientGone) }
        defer { watch.cancel() }
        let code = await withTaskGroup(of: Int32?.self) { group -> Int32 in
            group.addTask { await self.serve(input) }
            group.addTask {
                for await event in self.lifecycle {
                    switch event {
                    case .terminate: if let code = await self.stop(.terminated) { return code }
                    case .clientGone: if let code = await self.stop(.clientGone) { return code }
                    case .outputPressure: await self.downloader.setHeld(self.writer.backedUp)
                    }
                }
                return nil
            }
            var code: Int32 = 0
            for await result in group {
                if let result {
                    code = result
                    break
                }
            }
            group.cancelAll()
            return code
        }
        lifecycleContinuation.finish()
        return code
    }

    /// Releases the HTTP client (its connections and threads). For a worker run inside a longer
    /// process, after `run` returned; the protocol's process simply exits.
    public func close() async {
        await httpClients?.shutdown()
    }

    private func serve(_ input: InputReader) async -> Int32? {
        let dispatcher = makeDispatcher()
        for await item in input.items {
            switch item {
            case .end:
                return await stop(.inputEnded(cancelInFlight: options.onEOF == .cancel, grace: options.eofGraceMs.map { .milliseconds($0) }))
            case .message(let bytes, let framing):
                writer.framing = framing
                let outcome = await dispatcher.dispatch(bytes)
                if let reply = outcome.reply { writer.send(reply) }
                for work in outcome.afterReply { await work() }
            case .tooLarge(let limit, let framing):
                writer.framing = framing
                writer.send(RPCResponse.failure(id: .null, error: .parseError("message longer than \(limit) bytes; it was skipped")))
            case .badHeader(let reason, let framing):
                writer.framing = framing
                writer.send(RPCResponse.failure(id: .null, error: .parseError(reason)))
            }
            if let plan = session.withLock({ $0.exitPlan }) { return await flush(plan) }
            // Past `maxLiveDownloads`, the next message is read once a download has ended.
            await backlog.waitForRoom()
            input.itemHandled()
            if let plan = session.withLock({ $0.exitPlan }) { return await flush(plan) }
        }
        return nil
    }
}
