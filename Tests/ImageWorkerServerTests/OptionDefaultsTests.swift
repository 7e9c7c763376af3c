import ImageDownloader
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// The defaults the schema gives (and so the docs, the clients' types and `get --help` print,
/// from `OptionTable.Defaults`) are the ones the worker uses.
struct OptionDefaultsTests {
    @Test func theWorkersConfigurationDefaultsAreTheSchemas() {
        let c = DownloaderConfiguration()
        typealias D = OptionTable.Defaults.Configure
        #expect(Int64(c.maxConcurrentDownloads) == D.maxConcurrentDownloads)
        #expect(Int64(c.maxConcurrentPerHost) == D.maxConcurrentPerHost)
        #expect((c.maxRequestsPerSecondPerHost ?? 0) == D.maxRequestsPerSecondPerHost, "none: no limit, as 0")
        #expect(c.executionOrder.rawValue == D.executionOrder)
        #expect(c.timeoutMs == D.timeoutMs)
        #expect(c.progressIntervalMs == D.progressIntervalMs)
        #expect(Int64(c.maxRetries) == D.maxRetries)
        #expect(c.retryBaseDelayMs == D.retryBaseDelayMs)
        #expect(c.retryMaxDelayMs == D.retryMaxDelayMs)
        #expect(c.maxBodyBytes == D.maxBodyBytes)
        #expect(Int64(c.maxRedirects) == D.maxRedirects)
        #expect(c.failedURLExpiryMs == D.failedURLExpiryMs)
        #expect(Int64(c.hostDownAfter) == D.hostDownAfter)
        #expect(c.hostDownMs == D.hostDownMs)
        let decoding = DecodeSettings()
        #expect(Int64(decoding.maxPixels) == D.maxPixels)
        #expect(Int64(decoding.maxProgressiveScans) == D.maxProgressiveScans)
    }

    @Test func aDownloadsDefaultsAreTheSchemas() throws {
        let params = try DownloadParams(RPCRequest(id: .int(1), method: WorkerMethod.download, params: ["url": "http://127.0.0.1/a.jpg"]))
        #expect(params.request.priority.name == OptionTable.Defaults.Download.priority)
        #expect(params.output.format.rawValue == OptionTable.Defaults.Output.format)
        #expect(params.output.partialIntervalMs == OptionTable.Defaults.Output.partialIntervalMs)
        #expect(params.output.delivery.rawValue == OptionTable.choiceDefaults["output.delivery"])
        #expect(params.output.format.rawValue == OptionTable.choiceDefaults["output.format"])
        let jpeg = try DownloadParams(
            RPCRequest(id: .int(1), method: WorkerMethod.download, params: ["url": "http://127.0.0.1/a.jpg", "output": ["format": "jpeg"]]))
        guard case .jpeg(_, let subsampling)? = jpeg.output.encoding else {
            Issue.record("jpeg output has no JPEG encoding")
            return
        }
        #expect(subsampling.rawValue == OptionTable.Defaults.Output.chromaSubsampling)
    }
}
