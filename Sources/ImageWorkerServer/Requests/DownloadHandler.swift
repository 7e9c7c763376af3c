import ImageDownloader
import InputValidation
import ImageWorkerProtocol

/// `download`: the token reserved before the reply, the download started after it (so that no
/// event of the token precedes its response); params read by `DownloadParams`.
extension WorkerServer {
    func download(_ request: RPCRequest) async throws -> RPCReply {
        let params = try DownloadParams(request)
        let token = params.request.token
        do {
            try await downloader.reserve(token, url: params.request.url, priority: params.request.priority)
        } catch {
            throw RPCError.invalidParams("token \(token.json) is already in use by a live download")
        }
        if let id = request.id {
            session.withLock { s in
                s.tokenByRequest[id] = token
                s.requestByToken[token] = id
            }
        }
        if params.progressive { progressive.register(token, url: params.request.url, spec: params.output) }
        let spec = params.output
        let progressive = self.progressive
        let downloader = self.downloader
        let downloadRequest = params.request
        let decodes = self.decodes
        let slots = self.slots
        let settings = self.decodeSettings
        let writer = self.writer
        let sentURL = DownloadURL.redacted(params.request.url)
        return RPCReply(
            ["token": token.json],
            afterReply: {
                await downloader.start(downloadRequest) { resource throws(DeliveryFailure) in
                    try await OutputDelivery.deliver(
                        resource, token: token, url: sentURL, spec: spec, decodes: decodes, progressive: progressive, slots: slots,
                        settings: settings.withLock { $0 }, outputCapacity: { await writer.waitForCapacity() })
                }
            })
    }
}
