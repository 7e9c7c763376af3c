import ImageDownloader
import ImageWorkerProtocol

/// `configure`: settings changed at run time; params read by `ConfigurationParams`.
extension WorkerServer {
    func configure(_ request: RPCRequest) async throws -> RPCReply {
        var configuration = await downloader.configuration
        var decoding = decodeSettings.withLock { $0 }
        let clear = try ConfigurationParams.apply(request, to: &configuration, decoding: &decoding)
        await downloader.configure(configuration)
        httpCache?.setMaxBytes(configuration.cacheMaxBytes)
        decodeSettings.withLock { $0 = decoding }
        slots.setLimits(concurrency: decoding.decodeConcurrency, memoryBytes: decoding.decodeMemoryBytes)
        shared.setLimits(.init(maxImages: decoding.sharedMaxImages, maxBytes: decoding.sharedMaxBytes))
        backlog.setLimit(decoding.maxLiveDownloads, suspended: configuration.suspended)
        if clear { await downloader.clearFailedURLs() }
        return RPCReply(["configuration": ConfigurationParams.json(configuration, decoding)])
    }
}
