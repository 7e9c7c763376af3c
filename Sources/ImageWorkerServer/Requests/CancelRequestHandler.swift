import ImageDownloader
import ImageWorkerProtocol

/// LSP's `$/cancelRequest`: cancels the token of a `download` request by the request's id.
extension WorkerServer {
    func cancelRequest(_ request: RPCRequest) async throws -> RPCReply {
        guard let raw = request.params?["id"], let id = RPCId(raw) else {
            throw RPCError.invalidParams("$/cancelRequest needs \"id\"")
        }
        if let token = session.withLock({ $0.tokenByRequest[id] }) {
            await downloader.cancel(token)
        }
        return RPCReply([:])
    }
}
