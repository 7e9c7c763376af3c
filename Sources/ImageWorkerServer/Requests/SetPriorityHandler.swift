import ImageDownloader
import ImageWorkerProtocol

/// `setPriority`: a live token's priority, and its fetch's place in the queue.
extension WorkerServer {
    func setPriority(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["token", "priority"])
        let token = try p.requiredToken()
        guard let name = try p.oneOf("priority", DownloadPriority.allCases.map(\.name)) else {
            throw RPCError.invalidParams("setPriority needs \"priority\"")
        }
        let found = await downloader.setPriority(token, DownloadPriority(name: name)!)
        return RPCReply(["token": token.json, "found": .bool(found)])
    }
}
