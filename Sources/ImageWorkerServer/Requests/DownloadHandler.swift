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
        if params.progressive { deliveries.register(token, url: sentURL, spec: params.output) }
        // A queued download holds no closure of its own: the processor is shared with the
        // downloads before it that asked for the same output, and told the token and URL.
        let output = sharedOutput(params.output)
        let downloadRequest = params.request
        return RPCReply(
            ["token": token.json],
            afterReply: {
                let spec = output.spec
                // `skipExisting`: a target there already is kept and described, and nothing fetched.
                if spec.skipExisting {
                    let kept = await BlockingWork.run { () -> Result<JSONObject, DeliveryFailure>? in
                        guard let path = FileTarget.existing(spec: spec, url: sentURL, token: token) else { return nil }
                        return Result { () throws(DeliveryFailure) in try FileTarget.describeExisting(path, spec: spec, url: sentURL) }
                    }
                    if let kept {
                        await self.downloader.complete(token, kept)
                        return
                    }
                }
                await self.downloader.start(downloadRequest, processor: output.processor)
            })
    }

    /// Decodes, writes or encodes a fetched resource as `spec` asks, for one token.
    func deliver(_ resource: FetchedResource, _ ticket: ProcessingTicket, spec: OutputSpec) async throws(DeliveryFailure) -> JSONObject {
        return try await OutputDelivery.deliver(
            resource, token: ticket.token, priority: ticket.priority, url: ticket.url, spec: spec, deliveries: deliveries, slots: slots,
            shared: shared, settings: decodeSettings.withLock { $0 })
    }

    /// The output spec and its processor, shared with the previous download's when the two
    /// specs are equal (a bulk job asks every token for the same output).
    private func sharedOutput(_ spec: OutputSpec) -> OutputProcessor {
        recentOutput.withLock { recent in
            if let recent, recent.spec == spec { return recent }
            let made = OutputProcessor(spec, server: self)
            recent = made
            return made
        }
    }
}
