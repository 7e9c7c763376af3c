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
        let priority = DownloadPriority(name: name)!
        let found = await downloader.setPriority(token, priority)
        // A token whose body is in and whose decode waits moves in the delivery stage too.
        if found { slots.setPriority(token, priority) }
        return RPCReply(["token": token.json, "found": .bool(found)])
    }
}
