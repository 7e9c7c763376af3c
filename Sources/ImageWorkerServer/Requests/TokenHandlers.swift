import ImageDownloader
import ImageWorkerProtocol

/// Requests on live tokens: `cancel`, `setPriority`, `cancelAll` and `$/cancelRequest`.
extension WorkerServer {
    func cancel(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["token"])
        let token = try p.requiredToken()
        let found = await downloader.cancel(token)
        return RPCReply(["token": token.json, "found": .bool(found)])
    }

    func setPriority(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["token", "priority"])
        let token = try p.requiredToken()
        guard let name = try p.oneOf("priority", DownloadPriority.allCases.map(\.name)) else {
            throw RPCError.invalidParams("setPriority needs \"priority\"")
        }
        let found = await downloader.setPriority(token, DownloadPriority(name: name)!)
        return RPCReply(["token": token.json, "found": .bool(found)])
    }

    func cancelAll(_ request: RPCRequest) async throws -> RPCReply {
        _ = try ParamReader(request, allowed: [])
        let count = await downloader.cancelAll()
        return RPCReply(["cancelled": JSONValue(count)])
    }

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
