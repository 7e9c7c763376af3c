import ImageDownloader
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerServer

/// `configure`'s `decodeConcurrency` also sizes the delivery stage (SPEC: "no new fetch starts
/// while 4 × `decodeConcurrency` fetches (at least 8) are in it holding 16 MiB or more, or 16 (at
/// least 4 × `decodeConcurrency`) whatever they hold"): the downloader's limits follow it, and an
/// invalid value changes nothing.
struct ConfigurationParamsTests {
    private func configure(_ fields: JSONObject, _ configuration: inout DownloaderConfiguration) throws {
        var decoding = DecodeSettings()
        _ = try ConfigurationParams.apply(
            RPCRequest(id: .int(1), method: WorkerMethod.configure, params: .object(fields)), to: &configuration, decoding: &decoding)
    }

    @Test(arguments: [(1, 8, 16), (2, 8, 16), (3, 12, 16), (4, 16, 16), (5, 20, 20), (16, 64, 64)])
    func decodeConcurrencySizesTheDeliveryStage(concurrency: Int, bodiesPastTheBytes: Int, bodies: Int) throws {
        var configuration = DownloaderConfiguration()
        try configure(["decodeConcurrency": .int(Int64(concurrency))], &configuration)
        #expect(configuration.minDeliveringFetches == bodiesPastTheBytes)
        #expect(configuration.maxDeliveringFetches == bodies)
        #expect(configuration.maxDeliveringBytes == 16 << 20)
    }

    @Test func aRefusedConfigureLeavesTheDeliveryStageAsItWas() throws {
        var configuration = DownloaderConfiguration()
        try configure(["decodeConcurrency": 5], &configuration)
        #expect(throws: RPCError.self) { try configure(["decodeConcurrency": 0], &configuration) }
        #expect(throws: RPCError.self) { try configure(["decodeConcurrency": 7, "maxConcurrentDownloads": -1], &configuration) }
        #expect(configuration.maxDeliveringFetches == 20)
    }
}
