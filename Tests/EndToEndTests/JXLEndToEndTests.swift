import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// JPEG XL through the real worker: decoded like any image, with partial images while a file
/// arrives, and its stored size, orientation and format reported.
@Suite struct JXLEndToEndTests {
    static let corpus = WorkerProcess.repositoryRoot.appendingPathComponent("Tests/Corpora/jxl")

    func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: Self.corpus.appendingPathComponent(name))) }

    @Test func aJXLIsDecodedLikeAnyImage() async throws {
        let server = try await TestHTTPServer.start()
        defer { Task { await server.shutdown() } }
        for name in ["bicycles.jxl", "bench_oriented_brg.jxl"] { server.setFile(name, try bytes(name)) }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/bicycles.jxl")), "token": "a", "output": ["format": "rgb", "delivery": "inline"]])
        worker.request(2, "download", [
            "url": .string(server.url("/files/bench_oriented_brg.jxl")), "token": "o",
            "output": ["format": "png", "delivery": "inline", "applyOrientation": true],
        ])
        // (The 11-megapixel progressive file's passes are JXLDecodingTests': here, beside tests that
        // time themselves, a sequential file's groups as they arrive.)
        worker.request(3, "download", [
            "url": .string(server.url("/files/bicycles.jxl?chunk=8192&delayMs=30")), "token": "p", "progressive": true,
            "output": ["format": "rgb", "delivery": "inline", "partialIntervalMs": 0],
        ])
        let a = try await worker.completion("a")["params"]
        #expect(a?["outcome"] == "success" && a?["sourceFormat"] == "jxl")
        let pixels = Array(try #require(a?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }))
        var options = DecodeOptions()
        options.layout = .rgb
        #expect(pixels == (try ImageDecoders.decode(try bytes("bicycles.jxl"), options: options)).pixels)
        // Turned upright by the orientation the basic info gives.
        let o = try await worker.completion("o")["params"]
        let stored = try ImageDecoders.decode(try bytes("bench_oriented_brg.jxl"))
        #expect(o?["orientation"]?.integerValue == Int64(stored.orientation))
        let png = Array(try #require(o?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }))
        let upright = stored.applyingOrientation()
        #expect(try ImageDecoders.decode(png).pixels == upright.converted(to: .rgb).converted(to: .rgba).pixels)
        // Partial images as the groups arrive, then the final image, the whole decode's.
        let p = try await worker.completion("p")["params"]
        #expect(p?["outcome"] == "success" && p?["width"] == 1024)
        #expect(Array(try #require(p?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) })) == pixels)
        let partials = worker.events("p").filter { $0["method"] == .string(WorkerEvent.partialImage) }
        #expect(partials.count >= 1, "\(partials.count) partial images")  // (one per 32 KiB of groups decoded)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
