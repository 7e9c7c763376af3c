import AsyncHTTPClient
import ImageDownloader
import ImageWorkerProtocol
import Logging
import Synchronization

/// The worker behind stdin/stdout: JSON-RPC requests in, downloader calls and events out, and the
/// process's life (stdin EOF, `shutdown`/`exit`, signals, a vanished reader).
public final class WorkerServer: Sendable {
    public static let version = "0.1.0"

    private struct SessionState {
        var shutdownRequested = false
        var shutdownCompleted = false
        var terminating = false
        var exitCode: Int32?
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
    public let downloader: Downloader<JSONObject, DeliveryFailure>
    private let httpClient: HTTPClient
    private let logger: Logger
    private let session = LockedState(SessionState())
    private let decodeSettings: LockedState<DecodeSettings>
    private let decodes = SharedDecodes()
    private let slots = DecodeSlots()
    private let progressive: ProgressiveDecodes
    private let lifecycle: AsyncStream<LifecycleEvent>
    private let lifecycleContinuation: AsyncStream<LifecycleEvent>.Continuation

    /// - Parameter wireFD: where protocol messages go (a private `dup` of the original stdout).
    public init(options: WorkerOptions, wireFD: Int32, logger: Logger) {
        self.options = options
        self.logger = logger
        let (lifecycle, continuation) = AsyncStream<LifecycleEvent>.makeStream()
        self.lifecycle = lifecycle
        self.lifecycleContinuation = continuation
        let writer = WireWriter(
            fd: wireFD, onClosed: { continuation.yield(.clientGone) }, onBackedUpChange: { continuation.yield(.outputPressure) })
        self.writer = writer
        let client = HTTPLoader.makeClient()
        self.httpClient = client
        let session = self.session
        let settings = LockedState(DecodeSettings())
        self.decodeSettings = settings
        let progressive = ProgressiveDecodes(writer: writer, settings: settings)
        self.progressive = progressive
        self.downloader = Downloader(
            configuration: options.configuration,
            httpLoader: HTTPLoader(client: client, cookies: CookieJar(), logger: logger),
            fileURLPolicy: FileURLPolicy(root: options.fileRoot),
            logger: logger,
            bodyObserver: { progressive.observe($0) },
            sink: { event in
                let (message, replaceKey) = EventEncoder.encode(event)
                guard case .completed(let token, _) = event else {
                    writer.send(message, replaceKey: replaceKey)
                    return
                }
                // Atomically with the end of the token's partial images.
                progressive.finish(token) { writer.send(message) }
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
        let code = await withTaskGroup(of: Int32?.self) { group -> Int32 in
            group.addTask { await self.serve(input) }
            group.addTask {
                for await event in self.lifecycle {
                    switch event {
                    case .terminate: return await self.stop(reason: "termination requested", exitCode: 0)
                    case .clientGone: return await self.stop(reason: "stdout closed: the client is gone", exitCode: 0)
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
        try? await httpClient.shutdown()
    }

    private func stop(reason: String, exitCode: Int32) async -> Int32 {
        logger.info("stopping", metadata: ["reason": "\(reason)"])
        session.withLock { $0.terminating = true }
        await downloader.cancelAll()
        await waitUntilIdle(atMost: .milliseconds(500))
        await writer.flush(timeout: .milliseconds(500))
        return exitCode
    }

    private func waitUntilIdle(atMost limit: Duration) async {
        await withTimeLimit(limit) { await self.downloader.waitUntilIdle() }
    }

    private func serve(_ input: InputReader) async -> Int32? {
        let dispatcher = makeDispatcher()
        for await item in input.items {
            switch item {
            case .end:
                if options.onEOF == .cancel {
                    logger.info("stdin closed: cancelling what is in flight")
                    await downloader.cancelAll()
                } else {
                    logger.info("stdin closed: finishing what is in flight")
                    await downloader.resumeToDrain()
                }
                await downloader.waitUntilIdle()
                await writer.flush()
                return 0
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
            input.itemHandled()
            if let code = session.withLock({ $0.exitCode }) {
                await writer.flush(timeout: .seconds(2))
                return code
            }
        }
        return nil
    }

    // MARK: Methods

    private func makeDispatcher() -> RPCDispatcher {
        var dispatcher = RPCDispatcher(methods: [
            WorkerMethod.initialize: { [self] in try await initialize($0) },
            WorkerMethod.download: { [self] in try await download($0) },
            WorkerMethod.cancel: { [self] in try await cancel($0) },
            WorkerMethod.setPriority: { [self] in try await setPriority($0) },
            WorkerMethod.configure: { [self] in try await configure($0) },
            WorkerMethod.status: { [self] in try await status($0) },
            WorkerMethod.cancelAll: { [self] in try await cancelAll($0) },
            WorkerMethod.shutdown: { [self] in try await shutdown($0) },
            WorkerMethod.exit: { [self] in try await exit($0) },
            WorkerMethod.cancelRequest: { [self] in try await cancelRequest($0) },
        ])
        let session = self.session
        dispatcher.gate = { request in
            let (shutdown, terminating) = session.withLock { ($0.shutdownRequested, $0.terminating) }
            if terminating, request.method == WorkerMethod.download {
                return .invalidRequest("the worker is stopping")
            }
            if shutdown, request.method != WorkerMethod.exit {
                return .invalidRequest("the worker is shutting down: only the exit notification is accepted")
            }
            return nil
        }
        let logger = self.logger
        dispatcher.onUnanswered = { logger.warning("\($0)") }
        return dispatcher
    }

    private func initialize(_ request: RPCRequest) async throws -> RPCReply {
        if let params = request.params, params.objectValue == nil {
            throw RPCError.invalidParams("initialize takes its params as an object")
        }
        let configuration = await downloader.configuration
        let decoding = decodeSettings.withLock { $0 }
        return RPCReply([
            "protocolVersion": .string(WorkerProtocolVersion.current),
            "serverInfo": ["name": "image-worker", "version": .string(WorkerServer.version)],
            "capabilities": [
                "framing": ["ndjson", "content-length"],
                "batch": true,
                "delivery": .array(OutputSpec.Delivery.allCases.map { .string($0.rawValue) }),
                "formats": .array(OutputSpec.Format.allCases.map { .string($0.rawValue) }),
                "priorities": .array(DownloadPriority.allCases.map { .string($0.name) }),
                "schemes": .array((["http", "https"] + (options.fileRoot != nil ? ["file"] : [])).map { .string($0) }),
                "partialImages": true,
                "decodes": ["jpeg", "png"],
            ],
            "configuration": ConfigurationParams.json(configuration, decoding),
        ])
    }

    private func download(_ request: RPCRequest) async throws -> RPCReply {
        let params = try DownloadParams(request)
        let token = params.request.token
        do {
            try await downloader.reserve(token, url: params.request.url, priority: params.request.priority)
        } catch {
            throw RPCError.invalidParams("token \(token.json) is already in use by a live download")
        }
        if let id = request.id {
            session.withLock { s in
                s.tokenByRequest[id] = token
                s.requestByToken[token] = id
            }
        }
        if params.progressive { progressive.register(token, url: params.request.url, spec: params.output) }
        let spec = params.output
        let progressive = self.progressive
        let downloader = self.downloader
        let downloadRequest = params.request
        let decodes = self.decodes
        let slots = self.slots
        let settings = self.decodeSettings
        let writer = self.writer
        return RPCReply(
            ["token": token.json],
            afterReply: {
                await downloader.start(downloadRequest) { resource throws(DeliveryFailure) in
                    try await OutputDelivery.deliver(
                        resource, token: token, spec: spec, decodes: decodes, progressive: progressive, slots: slots,
                        settings: settings.withLock { $0 }, outputCapacity: { await writer.waitForCapacity() })
                }
            })
    }

    private func cancel(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["token"])
        let token = try p.requiredToken()
        let found = await downloader.cancel(token)
        return RPCReply(["token": token.json, "found": .bool(found)])
    }

    private func setPriority(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["token", "priority"])
        let token = try p.requiredToken()
        guard let name = try p.oneOf("priority", DownloadPriority.allCases.map(\.name)) else {
            throw RPCError.invalidParams("setPriority needs \"priority\"")
        }
        let found = await downloader.setPriority(token, DownloadPriority(name: name)!)
        return RPCReply(["token": token.json, "found": .bool(found)])
    }

    private func configure(_ request: RPCRequest) async throws -> RPCReply {
        var configuration = await downloader.configuration
        var decoding = decodeSettings.withLock { $0 }
        let clear = try ConfigurationParams.apply(request, to: &configuration, decoding: &decoding)
        await downloader.configure(configuration)
        decodeSettings.withLock { $0 = decoding }
        if clear { await downloader.clearFailedURLs() }
        return RPCReply(["configuration": ConfigurationParams.json(configuration, decoding)])
    }

    private func status(_ request: RPCRequest) async throws -> RPCReply {
        _ = try ParamReader(request, allowed: [])
        let s = await downloader.status()
        let live: [JSONValue] = s.liveTokens.map { t in
            [
                "token": t.token.json, "url": .string(t.url), "priority": .string(t.priority.name), "state": .string(t.state.rawValue),
                "receivedBytes": .int(t.receivedBytes), "expectedBytes": t.expectedBytes.map { .int($0) } ?? .null,
            ]
        }
        let (shuttingDown, framing) = (session.withLock { $0.shutdownRequested }, writer.framing)
        let decodesStarted = await decodes.decodesStarted + progressive.decodesStarted
        return RPCReply([
            "queued": JSONValue(s.queuedTokens),
            "running": JSONValue(s.runningTokens),
            "finished": JSONValue(s.succeeded + s.failed + s.cancelled),
            "succeeded": JSONValue(s.succeeded),
            "failed": JSONValue(s.failed),
            "cancelled": JSONValue(s.cancelled),
            "fetches": ["queued": JSONValue(s.queuedFetches), "running": JSONValue(s.runningFetches)],
            "blockedURLs": JSONValue(s.blockedURLs),
            "decodes": JSONValue(decodesStarted),
            "liveTokens": .array(live),
            "configuration": ConfigurationParams.json(s.configuration, decodeSettings.withLock { $0 }),
            "framing": .string(framing.rawValue),
            "shuttingDown": .bool(shuttingDown),
        ])
    }

    private func cancelAll(_ request: RPCRequest) async throws -> RPCReply {
        _ = try ParamReader(request, allowed: [])
        let count = await downloader.cancelAll()
        return RPCReply(["cancelled": JSONValue(count)])
    }

    /// LSP's shutdown: refuse everything after it but `exit`; answer once every live token has
    /// ended (in-flight work finishes, or is cancelled with `cancelPending`).
    private func shutdown(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["cancelPending"])
        let cancelPending = try p.bool("cancelPending") ?? false
        session.withLock { $0.shutdownRequested = true }
        if cancelPending { await downloader.cancelAll() } else { await downloader.resumeToDrain() }
        await downloader.waitUntilIdle()
        session.withLock { $0.shutdownCompleted = true }
        return RPCReply([:])
    }

    /// LSP's exit: status 0 after a completed shutdown, 1 otherwise (then in-flight work is
    /// cancelled first, and every token still gets its terminal event).
    private func exit(_ request: RPCRequest) async throws -> RPCReply {
        let clean = session.withLock { $0.shutdownCompleted }
        if !clean {
            session.withLock { $0.terminating = true }
            await downloader.cancelAll()
            await waitUntilIdle(atMost: .seconds(1))
        }
        session.withLock { $0.exitCode = clean ? 0 : 1 }
        return RPCReply([:])
    }

    private func cancelRequest(_ request: RPCRequest) async throws -> RPCReply {
        guard let raw = request.params?["id"], let id = RPCId(raw) else {
            throw RPCError.invalidParams("$/cancelRequest needs \"id\"")
        }
        if let token = session.withLock({ $0.tokenByRequest[id] }) {
            await downloader.cancel(token)
        }
        return RPCReply([:])
    }
}
