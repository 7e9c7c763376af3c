import ImageDownloader
import ImageWorkerProtocol

/// LSP's `shutdown` and `exit`, through the server's `ServerLifecycle`.
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

    /// LSP's exit: status 0 after a completed shutdown, 1 otherwise (then in-flight work is
    /// cancelled first, and every token still gets its terminal event).
    /// The in-flight work is settled here, before the (rare) reply; the serve loop flushes the
    /// output and ends with the plan's status.
    func exit(_ request: RPCRequest) async throws -> RPCReply {
        guard let plan = session.withLock({ $0.lifecycle.stop(.exit) }) else { return RPCReply([:]) }
        await settle(plan)
        session.withLock { $0.exitPlan = plan }
        return RPCReply([:])
    }
}
