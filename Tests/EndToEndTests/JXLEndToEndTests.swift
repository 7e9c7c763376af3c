import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// JPEG XL through the real worker: decoded to every output, with partial images while a
/// progressive file arrives, and its stored size, orientation and format reported.
@Suite struct JXLEndToEndTests {
    static let corpus = WorkerProcess.repositoryRoot.appendingPathComponent("Tests/Corpora/jxl")

    func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: Self.corpus.appendingPathComponent(name))) }

    @Test func aJXLIsDecodedLikeAnyImage() async throws {
        let server = try await TestHTTPServer.start()
        defer { Task { await server.shutdown() } }
        for name in ["bicycles.jxl", "progressive.jxl", "bench_oriented_brg.jxl"] { server.setFile(name, try bytes(name)) }
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": .string(server.url("/files/bicycles.jxl")), "token": "a", "output": ["format": "rgb", "delivery": "inline"]])
        worker.request(2, "download", [
            "url": .string(server.url("/files/bench_oriented_brg.jxl")), "token": "o",
            "output": ["format": "png", "delivery": "inline", "applyOrientation": true],
        ])
        worker.request(3, "download", [
            "url": .string(server.url("/files/progressive.jxl?chunk=65536&delayMs=20")), "token": "p", "progressive": true,
            // (Described, not delivered: an 11-megapixel frame's partial images, in a debug build.)
            "output": ["format": "rgb", "delivery": "none", "partialIntervalMs": 0],
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
        // Partial images as the passes arrive, then the final image.
        let p = try await worker.completion("p", timeout: .seconds(120))["params"]
        #expect(p?["outcome"] == "success" && p?["width"] == 4064)
        let partials = worker.events("p").filter { $0["method"] == .string(WorkerEvent.partialImage) }
        #expect(partials.count >= 2, "\(partials.count) partial images")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
