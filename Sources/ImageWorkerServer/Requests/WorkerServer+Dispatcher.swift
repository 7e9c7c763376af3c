import ImageWorkerProtocol

/// The table of methods: each wire method to its handler (one file each, beside this one), and the
/// lifecycle's gate that refuses what the worker no longer takes (after `shutdown`).
extension WorkerServer {
    func makeDispatcher() -> RPCDispatcher {
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
            session.withLock { $0.lifecycle.refusal(of: request.method) }.map { RPCError.invalidRequest($0) }
        }
        let logger = self.logger
        dispatcher.onUnanswered = { logger.warning("\($0)") }
        return dispatcher
    }
}
