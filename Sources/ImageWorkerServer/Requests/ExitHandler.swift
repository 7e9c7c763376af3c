import ImageDownloader
import ImageWorkerProtocol

/// LSP's `exit`, through the server's `ServerLifecycle`.
extension WorkerServer {
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
