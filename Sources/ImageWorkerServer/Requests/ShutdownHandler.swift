import ImageDownloader
import ImageWorkerProtocol

/// LSP's `shutdown`, through the server's `ServerLifecycle`.
extension WorkerServer {
    /// The wait for in-flight work before what is left is cancelled (an editor that sends
    /// `shutdown` on close must not hang on one stalled download).
    static let defaultShutdownTimeoutMs: Int64 = 2_000

    /// LSP's shutdown: refuse everything after it but `exit`; answer once every live token has
    /// ended (in-flight work finishes within `timeoutMs`, then what is left is cancelled; or all
    /// of it is cancelled at once with `cancelPending`).
    func shutdown(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["cancelPending", "timeoutMs"])
        let cancelPending = try p.bool("cancelPending") ?? false
        let timeoutMs = try p.integer("timeoutMs", in: 0...86_400_000) ?? Self.defaultShutdownTimeoutMs
        session.withLock { $0.lifecycle.shutdownRequested() }
        if cancelPending { await downloader.cancelAll() } else { await downloader.resumeToDrain() }
        let downloader = self.downloader
        await withTimeLimit(.milliseconds(timeoutMs)) { await downloader.waitUntilIdle() }
        if await downloader.liveTokenCount > 0 {
            logger.info("shutdown: cancelling what did not finish in time", metadata: ["timeoutMs": "\(timeoutMs)"])
            await downloader.cancelAll()
        }
        await downloader.waitUntilIdle()
        session.withLock { $0.lifecycle.shutdownCompleted() }
        return RPCReply([:])
    }
}
