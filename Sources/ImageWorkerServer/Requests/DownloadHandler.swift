import ImageDownloader
import InputValidation
import ImageWorkerProtocol

/// `download`: the token reserved before the reply, the download started after it (so that no
/// event of the token precedes its response); params read by `DownloadParams`.
extension WorkerServer {
    func download(_ request: RPCRequest) async throws -> RPCReply {
        let params = try DownloadParams(request)
        let token = params.request.token
        if backlog.refusesWhileSuspended {
            let (live, limit) = backlog.counts
            throw RPCError(
                code: RPCError.queueFullCode, message: "Queue full",
                data: [
                    "reason": .string(
                        "the queue is suspended with \(live) live downloads (maxLiveDownloads \(limit)): resume it (configure suspended: false) or raise maxLiveDownloads"),
                    "maxLiveDownloads": JSONValue(limit),
                ])
        }
        do {
            try await downloader.reserve(token, url: params.request.url, priority: params.request.priority)
        } catch {
            throw RPCError.invalidParams("token \(token.json) is already in use by a live download")
        }
        backlog.accepted()
        if let id = request.id {
            session.withLock { s in
                s.tokenByRequest[id] = token
                s.requestByToken[token] = id
            }
        }
        let sentURL = DownloadURL.redacted(params.request.url)
        if params.progressive { progressive.register(token, url: sentURL, spec: params.output) }
        let spec = params.output
        let progressive = self.progressive
        let downloader = self.downloader
        let downloadRequest = params.request
        let decodes = self.decodes
        let slots = self.slots
        let shared = self.shared
        let settings = self.decodeSettings
        let writer = self.writer
        return RPCReply(
            ["token": token.json],
            afterReply: {
                // `skipExisting`: a target there already is kept and described, and nothing fetched.
                if spec.skipExisting {
                    let kept = await BlockingWork.run { () -> Result<JSONObject, DeliveryFailure>? in
                        guard let path = OutputDelivery.existingTarget(spec: spec, url: sentURL, token: token) else { return nil }
                        return Result { () throws(DeliveryFailure) in try OutputDelivery.describeExisting(path, spec: spec, url: sentURL) }
                    }
                    if let kept {
                        await downloader.complete(token, kept)
                        return
                    }
                }
                await downloader.start(downloadRequest, prioritizedProcessor: { resource, priority throws(DeliveryFailure) in
                    try await OutputDelivery.deliver(
                        resource, token: token, priority: priority, url: sentURL, spec: spec, decodes: decodes, progressive: progressive, slots: slots, shared: shared,
                        settings: settings.withLock { $0 }, outputCapacity: { await writer.waitForCapacity() })
                })
            })
    }
}
