import ImageDownloader
import ImageWorkerProtocol

/// `cancelAll`: every live token, those waiting in the queue first.
extension WorkerServer {
    func cancelAll(_ request: RPCRequest) async throws -> RPCReply {
        _ = try ParamReader(request, allowed: [])
        let count = await downloader.cancelAll()
        return RPCReply(["cancelled": JSONValue(count)])
    }
}
