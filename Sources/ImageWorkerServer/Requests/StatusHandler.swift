import ImageDownloader
import ImageWorkerProtocol

/// `status`: counts, live tokens, configuration.
extension WorkerServer {
    func status(_ request: RPCRequest) async throws -> RPCReply {
        _ = try ParamReader(request, allowed: [])
        let s = await downloader.status()
        let live: [JSONValue] = s.liveTokens.map { t in
            [
                "token": t.token.json, "url": .string(t.url), "priority": .string(t.priority.name), "state": .string(t.state.rawValue),
                "receivedBytes": .int(t.receivedBytes), "expectedBytes": t.expectedBytes.map { .int($0) } ?? .null,
            ]
        }
        let (shuttingDown, framing) = (session.withLock { $0.lifecycle.isShuttingDown }, writer.framing)
        let decodesStarted = await decodes.decodesStarted + progressive.decodesStarted
        return RPCReply([
            "queued": JSONValue(s.queuedTokens),
            "running": JSONValue(s.runningTokens),
            "delivering": JSONValue(s.deliveringTokens),
            "finished": JSONValue(s.succeeded + s.failed + s.cancelled),
            "succeeded": JSONValue(s.succeeded),
            "failed": JSONValue(s.failed),
            "cancelled": JSONValue(s.cancelled),
            "fetches": ["queued": JSONValue(s.queuedFetches), "running": JSONValue(s.runningFetches), "delivering": JSONValue(s.deliveringFetches)],
            "decodeStage": [
                "running": JSONValue(slots.counts.running), "waiting": JSONValue(slots.counts.waiting),
                "bitmapBytes": JSONValue(slots.counts.bytesInFlight),
            ],
            "shared": ["files": JSONValue(shared.pending.files), "bytes": JSONValue(shared.pending.bytes)],
            "blockedURLs": JSONValue(s.blockedURLs),
            "decodes": JSONValue(decodesStarted),
            "totals": [
                "fetches": JSONValue(s.totals.fetches), "attempts": JSONValue(s.totals.attempts), "resumed": JSONValue(s.totals.resumed),
                "redirects": JSONValue(s.totals.redirects), "wireBytes": .int(s.totals.wireBytes), "fromCache": JSONValue(s.totals.fromCache),
                "revalidated": JSONValue(s.totals.revalidated), "newConnections": JSONValue(s.totals.newConnections),
                "reusedConnections": JSONValue(s.totals.reusedConnections), "http2": JSONValue(s.totals.http2),
            ],
            "liveTokens": .array(live),
            "configuration": ConfigurationParams.json(s.configuration, decodeSettings.withLock { $0 }),
            "framing": .string(framing.rawValue),
            "shuttingDown": .bool(shuttingDown),
        ])
    }
}
