import ImageDownloader
import ImageWorkerProtocol

/// `cancel`: one token, idempotent (`found` says whether it was live).
extension WorkerServer {
    func cancel(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["token"])
        let token = try p.requiredToken()
        let found = await downloader.cancel(token)
        return RPCReply(["token": token.json, "found": .bool(found)])
    }
}
