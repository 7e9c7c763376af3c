import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

/// `initialize`: the protocol version, capabilities and configuration.
extension WorkerServer {
    func initialize(_ request: RPCRequest) async throws -> RPCReply {
        if let params = request.params, params.objectValue == nil {
            throw RPCError.invalidParams("initialize takes its params as an object")
        }
        let configuration = await downloader.configuration
        let decoding = decodeSettings.withLock { $0 }
        return RPCReply([
            "protocolVersion": .string(WorkerProtocolVersion.current),
            "serverInfo": ["name": "image-worker", "version": .string(WorkerServer.version)],
            "capabilities": [
                "framing": ["ndjson", "content-length"],
                "batch": true,
                "delivery": .array(OutputSpec.Delivery.allCases.map { .string($0.rawValue) }),
                "formats": .array(OutputSpec.Format.allCases.map { .string($0.rawValue) }),
                "priorities": .array(DownloadPriority.allCases.map { .string($0.name) }),
                "schemes": .array((["http", "https"] + (options.fileRoot != nil ? ["file"] : [])).map { .string($0) }),
                "partialImages": true,
                "httpCache": .bool(httpCache != nil),
                "decodes": .array(ImageDecoders.decodedFormats.map { .string($0.rawValue) }),
            ],
            "configuration": ConfigurationParams.json(configuration, decoding),
        ])
    }
}
