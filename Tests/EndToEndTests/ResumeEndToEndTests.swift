import Foundation
import ImageWorkerProtocol
import Testing
import TestSupport

/// Resumed downloads through the binary: a progressive decode goes on across the cuts.
@Suite struct ResumeEndToEndTests {
    @Test(arguments: [3, 8])
    func aProgressiveDecodeGoesOnAcrossResumedAttempts(seed: Int) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(0, "configure", ["retryBaseDelayMs": 1, "retryMaxDelayMs": 5, "maxRetries": 5])
        let output: JSONValue = ["format": "png", "delivery": "inline"]
        worker.request(1, "download", ["url": .string(server.url("/files/testimgp.jpg")), "token": "whole", "output": output])
        let reference = try await worker.completion("whole")
        worker.request(2, "status")
        let decodesBefore = try await worker.response(2)["result"]?["decodes"]?.integerValue ?? -1
        worker.request(
            3, "download",
            ["url": .string(server.url("/files/testimgp.jpg?ranges=1&drops=2&seed=\(seed)")), "token": "cut", "progressive": true,
             "output": ["format": "png", "delivery": "inline", "partialIntervalMs": 0]])
        let resumed = try await worker.completion("cut")
        #expect(resumed["params"]?["outcome"] == "success", "\(resumed)")
        #expect(resumed["params"]?["data"] == reference["params"]?["data"], "the same image as a whole download")
        #expect(server.hits("/files/testimgp.jpg") == 4, "one whole, then one cut twice and resumed")
        worker.request(4, "status")
        let decodes = try await worker.response(4)["result"]?["decodes"]?.integerValue ?? -1
        #expect(decodes - decodesBefore == 1, "one progressive decode, fed each byte once")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
