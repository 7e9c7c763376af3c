import ImageDownloader
import ImageWorkerProtocol

/// LSP's `shutdown`, through the server's `ServerLifecycle`.
extension WorkerServer {
    /// LSP's shutdown: refuse everything after it but `exit`; answer once every live token has
    /// ended (in-flight work finishes, or is cancelled with `cancelPending`).
    func shutdown(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["cancelPending"])
        let cancelPending = try p.bool("cancelPending") ?? false
        session.withLock { $0.lifecycle.shutdownRequested() }
        if cancelPending { await downloader.cancelAll() } else { await downloader.resumeToDrain() }
        await downloader.waitUntilIdle()
        session.withLock { $0.lifecycle.shutdownCompleted() }
        return RPCReply([:])
    }
}
