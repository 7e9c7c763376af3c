import ImageDownloader
import ImageWorkerProtocol

/// `status`: counts, live tokens, configuration.
extension WorkerServer {
    /// Live tokens in one answer at most, unless `limit` says otherwise: a status line stays far
    /// below 64 KiB however many downloads are queued (100,000 made one line of 13.7 MB).
    static let defaultStatusLimit = 200

    func status(_ request: RPCRequest) async throws -> RPCReply {
        let p = try ParamReader(request, allowed: ["limit", "after"])
        let limit = Int(try p.integer("limit", in: 0...100_000) ?? Int64(Self.defaultStatusLimit))
        let after = try p.token("after")
        let s = await downloader.status()
        let (stage, pending) = (slots.counts, shared.pending)
        // Live tokens are sorted by token: a page is the `limit` after the cursor.
        var page = s.liveTokens[...]
        if let after { page = page.drop { !(after.description < $0.token.description) } }
        let shown = page.prefix(limit)
        let live: [JSONValue] = shown.map { t in
            [
                "token": t.token.json, "url": .string(t.url), "priority": .string(t.priority.name), "state": .string(t.state.rawValue),
                "receivedBytes": .int(t.receivedBytes), "expectedBytes": t.expectedBytes.map { .int($0) } ?? .null,
            ]
        }
        let (shuttingDown, framing) = (session.withLock { $0.lifecycle.isShuttingDown }, writer.framing)
        let decodesStarted = deliveries.decodesStarted
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
                "running": JSONValue(stage.running), "waiting": JSONValue(stage.waiting), "bitmapBytes": JSONValue(stage.bytesInFlight),
                "progressive": JSONValue(stage.progressive),
            ],
            "shared": ["files": JSONValue(pending.files), "bytes": JSONValue(pending.bytes)],
            "blockedURLs": JSONValue(s.blockedURLs),
            "hostsDown": .array(s.hostsDown.map { .string($0) }),
            "decodes": JSONValue(decodesStarted),
            "totals": [
                "fetches": JSONValue(s.totals.fetches), "attempts": JSONValue(s.totals.attempts), "resumed": JSONValue(s.totals.resumed),
                "redirects": JSONValue(s.totals.redirects), "wireBytes": .int(s.totals.wireBytes), "fromCache": JSONValue(s.totals.fromCache),
                "revalidated": JSONValue(s.totals.revalidated), "newConnections": JSONValue(s.totals.newConnections),
                "reusedConnections": JSONValue(s.totals.reusedConnections), "http2": JSONValue(s.totals.http2),
            ],
            "liveTokens": .array(live),
            "liveTokensTotal": JSONValue(s.liveTokens.count),
            // The cursor of the next page (pass it as `after`), when there is one.
            "nextAfter": shown.count < page.count ? (shown.last?.token.json ?? .null) : .null,
            "configuration": ConfigurationParams.json(s.configuration, decodeSettings.withLock { $0 }),
            "framing": .string(framing.rawValue),
            "shuttingDown": .bool(shuttingDown),
        ])
    }
}
