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
        // What the token's processor holds until it runs: the server, the token, the URL and a
        // spec shared with the downloads before it that asked for the same output. A queued
        // download is kept small (one closure of ~64 bytes, not a copy of every part).
        let output = sharedOutputSpec(params.output)
        let downloadRequest = params.request
        return RPCReply(
            ["token": token.json],
            afterReply: {
                let spec = output.spec
                // `skipExisting`: a target there already is kept and described, and nothing fetched.
                if spec.skipExisting {
                    let kept = await BlockingWork.run { () -> Result<JSONObject, DeliveryFailure>? in
                        guard let path = OutputDelivery.existingTarget(spec: spec, url: sentURL, token: token) else { return nil }
                        return Result { () throws(DeliveryFailure) in try OutputDelivery.describeExisting(path, spec: spec, url: sentURL) }
                    }
                    if let kept {
                        await self.downloader.complete(token, kept)
                        return
                    }
                }
                await self.downloader.start(downloadRequest, prioritizedProcessor: { [self] resource, priority throws(DeliveryFailure) in
                    try await self.deliver(resource, token: token, priority: priority, url: sentURL, spec: output.spec)
                })
            })
    }

    /// Decodes, writes or encodes a fetched resource as `spec` asks, for one token.
    private func deliver(
        _ resource: FetchedResource, token: DownloadToken, priority: DownloadPriority, url: String, spec: OutputSpec
    ) async throws(DeliveryFailure) -> JSONObject {
        let writer = self.writer
        return try await OutputDelivery.deliver(
            resource, token: token, priority: priority, url: url, spec: spec, decodes: decodes, progressive: progressive, slots: slots,
            shared: shared, settings: decodeSettings.withLock { $0 }, outputCapacity: { await writer.waitForCapacity() })
    }

    /// `spec` in a box shared with the previous download's when the two are equal (a bulk job
    /// asks every token for the same output).
    private func sharedOutputSpec(_ spec: OutputSpec) -> SharedOutputSpec {
        recentOutputSpec.withLock { recent in
            if let recent, recent.spec == spec { return recent }
            let made = SharedOutputSpec(spec)
            recent = made
            return made
        }
    }
}

/// An output spec several queued downloads hold by reference.
final class SharedOutputSpec: Sendable {
    let spec: OutputSpec
    init(_ spec: OutputSpec) { self.spec = spec }
}
