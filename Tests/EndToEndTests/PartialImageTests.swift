import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// Partial images while bytes arrive slowly: a progressive JPEG and an interlaced PNG.
@Suite struct PartialImageTests {
    func sample(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: E2E.samples.appendingPathComponent(name))) }

    func partials(_ worker: WorkerProcess, _ token: JSONValue) -> [JSONValue] {
        worker.events(token).filter { $0["method"] == .string(WorkerEvent.partialImage) }.compactMap { $0["params"] }
    }

    @Test(arguments: [("testimgp.jpg", 200), ("basi6a08.png", 24)])
    func partialImagesArriveInOrderThenTheFinalOne(file: String, chunk: Int) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/\(file)?chunk=\(chunk)&delayMs=40")), "token": "p", "progressive": true,
            "output": ["format": "rgba", "delivery": "inline", "partialIntervalMs": 0],
        ])
        let completed = try await worker.completion("p")["params"]
        #expect(completed?["outcome"] == "success")
        let events = worker.events("p")
        let list = partials(worker, "p")
        #expect(list.count >= 2, "\(file): \(list.count) partial images")
        // Strictly increasing; gaps are fine (an unsent partial image is replaced by a newer one).
        let sequences = list.map { $0["sequence"]?.integerValue ?? 0 }
        #expect(sequences.first ?? 0 >= 1 && zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "\(sequences)")
        let passes = list.map { $0["passes"]?.integerValue ?? -1 }
        #expect(passes == passes.sorted(), "scans/passes never go back")
        #expect(events.last?["method"] == .string(WorkerEvent.completed), "nothing after the terminal event")
        for partial in list {
            #expect(partial["width"] == completed?["width"] && partial["height"] == completed?["height"])
            let data = try #require(partial["data"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            #expect(data.count == Int(partial["stride"]?.integerValue ?? 0) * Int(partial["height"]?.integerValue ?? 0))
        }
        // The final image is the whole-buffer decode of the same bytes.
        let final = try #require(completed?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        #expect(Array(final) == (try ImageDecoders.decode(try sample(file))).pixels)
        worker.request(2, "status")
        #expect(try await worker.response(2)["result"]?["decodes"] == 1, "the progressive decode served the final image")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A PNG's `eXIf` orientation before its image data turns its partial images with
    /// `applyOrientation`, as it turns the final one; after the image data (known only at the
    /// end) only the final one is turned.
    @Test(arguments: [false, true])
    func partialImagesOfAPNGAreTurnedByAnExifChunkBeforeTheirRows(afterImageData: Bool) async throws {
        let (width, height) = (60, 36)
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8(x * 4), UInt8(y * 7), UInt8((x * y) & 0xFF), 255] }
        }
        let stored = DecodedImage(width: width, height: height, layout: .rgba, pixels: pixels, format: .png)
        let png = ExifSegment.png(
            try ImageEncoders.encode(stored, as: .png), block: ExifSegment.tiff(orientation: 6, littleEndian: true),
            afterImageData: afterImageData)
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        server.setFile("turned.png", png)
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/turned.png?chunk=\(png.count / 8)&delayMs=40")), "token": "t", "progressive": true,
            "output": ["format": "rgba", "delivery": "inline", "partialIntervalMs": 0, "applyOrientation": true],
        ])
        let completed = try await worker.completion("t")["params"]
        var upright = stored
        upright.orientation = 6
        #expect(completed?["orientation"] == 6 && completed?["width"] == JSONValue(height) && completed?["height"] == JSONValue(width))
        #expect(completed?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map(Array.init) == upright.applyingOrientation().pixels)
        let list = partials(worker, "t")
        #expect(!list.isEmpty)
        for partial in list {
            if afterImageData {
                #expect(partial["orientation"] == 1 && partial["width"] == JSONValue(width) && partial["height"] == JSONValue(height))
            } else {
                #expect(partial["orientation"] == 6 && partial["width"] == JSONValue(height) && partial["height"] == JSONValue(width))
            }
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// `partialMaxPixelSize`: each token's partial images at most that size (a progressive JPEG's
    /// from its coefficients when an eighth of the image covers them, else from the frame; an
    /// interlaced PNG's pass frames scaled down), the final image at the size asked, one decode.
    @Test(arguments: [("testimgp.jpg", 200), ("basi6a08.png", 24)])
    func partialImagesAtAPreviewSize(file: String, chunk: Int) async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let url = JSONValue.string(server.url("/files/\(file)?chunk=\(chunk)&delayMs=40"))
        worker.request(1, "download", [
            "url": url, "token": "tiny", "progressive": true,
            "output": ["format": "rgba", "delivery": "inline", "partialIntervalMs": 0, "partialMaxPixelSize": 16],
        ])
        worker.request(2, "download", [
            "url": url, "token": "mid", "progressive": true,
            "output": ["format": "png", "delivery": "inline", "partialIntervalMs": 0, "partialMaxPixelSize": 24, "maxPixelSize": 100],
        ])
        worker.request(3, "download", [
            "url": url, "token": "full", "progressive": true, "output": ["format": "rgb", "delivery": "none", "partialIntervalMs": 0],
        ])
        let whole = try ImageDecoders.decode(try sample(file))
        func fitted(_ limit: Int?, within: (width: Int, height: Int)? = nil) -> (width: Int, height: Int) {
            let base = within ?? (whole.width, whole.height)
            return ImageResampler.fittedSize(width: base.width, height: base.height, maxPixelSize: limit, maxPixelCount: nil)
        }
        let expected: [(token: JSONValue, partial: (width: Int, height: Int), final: (width: Int, height: Int))] = [
            ("tiny", fitted(16), (whole.width, whole.height)),
            ("mid", fitted(24, within: fitted(100)), fitted(100)),
            ("full", (whole.width, whole.height), (whole.width, whole.height)),
        ]
        for (token, partial, final) in expected {
            let completed = try await worker.completion(token)["params"]
            #expect(completed?["outcome"] == "success")
            #expect(completed?["width"]?.integerValue == Int64(final.width) && completed?["height"]?.integerValue == Int64(final.height))
            let list = partials(worker, token)
            #expect(!list.isEmpty, "\(file) \(token): no partial image")
            for event in list {
                #expect(event["width"]?.integerValue == Int64(partial.width) && event["height"]?.integerValue == Int64(partial.height),
                    "\(file) \(token): \(event["width"] ?? .null)x\(event["height"] ?? .null), not \(partial)")
                #expect(event["filledRows"]?.integerValue ?? -1 <= Int64(partial.height))
            }
            let passes = list.map { $0["passes"]?.integerValue ?? -1 }
            #expect(passes == passes.sorted(), "scans/passes never go back")
        }
        // The tiny token's last partial image looks like the whole image at that size.
        let last = try #require(partials(worker, "tiny").last)
        let bytes = Array(try #require(last["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }))
        let reference = ImageResampler.resize(whole.converted(to: .rgba), width: fitted(16).width, height: fitted(16).height)
        #expect(bytes.count == reference.pixels.count)
        if last["passes"]?.integerValue ?? 0 >= 2 {
            let mean = Double(zip(bytes, reference.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +)) / Double(bytes.count)
            #expect(mean < 24, "\(file): the preview is far from the image (mean difference \(mean))")
        }
        worker.request(4, "status")
        #expect(try await worker.response(4)["result"]?["decodes"] == 1, "one progressive decode served every token")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func partialFilesAreReplacedInPlaceByTheFinalImage() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/testimgp.jpg?chunk=300&delayMs=40")), "token": "f", "progressive": true,
            "output": ["format": "png", "delivery": "file", "dir": .string(out.path), "partialIntervalMs": 0],
        ])
        let completed = try await worker.completion("f")["params"]
        let list = partials(worker, "f")
        #expect(!list.isEmpty)
        let path = try #require(completed?["path"]?.stringValue)
        #expect(list.allSatisfy { $0["path"]?.stringValue == path }, "one file, replaced atomically")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["testimgp.png"], "no temporary files left")
        let written = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try ImageDecoders.decode(written).pixels == (try ImageDecoders.decode(try sample("testimgp.jpg"))).pixels)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func coalescedProgressiveAndPlainTokensShareTheOneDecode() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let url = JSONValue.string(server.url("/files/testimgp.jpg?chunk=400&delayMs=30"))
        worker.request(1, "download", ["url": url, "token": "prog", "progressive": true, "output": ["format": "png", "partialIntervalMs": 0]])
        worker.request(2, "download", ["url": url, "token": "plain", "output": ["format": "gray"]])
        worker.request(3, "download", ["url": url, "token": "late", "progressive": true, "output": ["format": "rgba"]])
        for token: JSONValue in ["prog", "plain", "late"] {
            #expect(try await worker.completion(token)["params"]?["outcome"] == "success")
        }
        #expect(partials(worker, "plain").isEmpty)
        #expect(!partials(worker, "prog").isEmpty)
        worker.request(4, "status")
        #expect(try await worker.response(4)["result"]?["decodes"] == 1, "one decode for the three tokens")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// PNG partial images are encoded from the decoder's own frame, once for all the tokens that
    /// asked the same; a token that asked a smaller size gets its own rendering.
    @Test func pngPartialImagesAreTheFrameAndSharedBetweenLikeTokens() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let url = JSONValue.string(server.url("/files/testimgp.jpg?chunk=300&delayMs=40"))
        let png: JSONValue = ["format": "png", "delivery": "inline", "partialIntervalMs": 0]
        worker.request(1, "download", ["url": url, "token": "a", "progressive": true, "output": png])
        worker.request(2, "download", ["url": url, "token": "b", "progressive": true, "output": png])
        worker.request(3, "download", [
            "url": url, "token": "small", "progressive": true,
            "output": ["format": "png", "delivery": "inline", "partialIntervalMs": 0, "maxPixelSize": 100],
        ])
        for token: JSONValue in ["a", "b", "small"] {
            #expect(try await worker.completion(token)["params"]?["outcome"] == "success")
        }
        func images(_ token: JSONValue) throws -> [(sequence: Int64, passes: Int64, image: DecodedImage, bytes: Data)] {
            try partials(worker, token).map { p in
                let bytes = try #require(p["data"]?.stringValue.flatMap { Data(base64Encoded: $0) })
                let image = try ImageDecoders.decode(Array(bytes))
                #expect(image.width == Int(p["width"]?.integerValue ?? 0) && image.height == Int(p["height"]?.integerValue ?? 0))
                return (p["sequence"]?.integerValue ?? 0, p["passes"]?.integerValue ?? 0, image, bytes)
            }
        }
        let a = try images("a")
        let b = try images("b")
        let small = try images("small")
        #expect(!a.isEmpty && !b.isEmpty && !small.isEmpty)
        #expect(a.allSatisfy { $0.image.width == 227 && $0.image.height == 149 })
        #expect(small.allSatisfy { $0.image.width == 100 && $0.image.height == 65 })
        // The same scan for both tokens: the very same PNG bytes (rendered once).
        for x in a {
            if let y = b.first(where: { $0.passes == x.passes }) { #expect(x.bytes == y.bytes, "scan \(x.passes)") }
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func cancellingAProgressiveTokenEndsItsPartialImages() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            // The body stops part-way until the test opens the gate: the cancel cannot lose a race
            // with the body's end, however loaded the machine.
            "url": .string(server.url("/files/testimgp.jpg?chunk=100&delayMs=20&pauseAt=4000&gate=cancel-c")), "token": "c",
            "progressive": true,
            "output": ["format": "rgba", "partialIntervalMs": 0],
        ])
        try await worker.waitFor("a partial image") { $0["method"] == .string(WorkerEvent.partialImage) }
        worker.request(2, "cancel", ["token": "c"])
        let completion = try await worker.completion("c")
        #expect(completion["params"]?["outcome"] == "cancelled", "\(completion)")
        server.openGate("cancel-c")
        try await Task.sleep(for: .milliseconds(300))
        #expect(worker.events("c").last?["method"] == .string(WorkerEvent.completed))
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A progressive decode holds its bitmap for as long as its body arrives: it counts against
    /// `decodeMemoryBytes`. With the budget taken by one, a second progressive fetch sends no
    /// partial images and is decoded whole, under the budget, once its body is in.
    @Test func progressiveDecodesCountAgainstTheDecodeMemoryBudget() async throws {
        let server = try await E2E.startServer()
        defer { Task { await server.shutdown() } }
        let png = try await offThePool { () throws -> [UInt8] in
            let (w, h) = (700, 700)  // 1.9 MB of RGBA: more than the 1 MiB budget
            var pixels = [UInt8](repeating: 0, count: w * h * 3)
            for i in stride(from: 0, to: pixels.count, by: 3) { pixels[i] = UInt8(truncatingIfNeeded: i / 2100) }
            return try ImageDecoders.encodePNG(DecodedImage(width: w, height: h, layout: .rgb, pixels: pixels, format: .png))
        }
        server.setFile("first.png", png)
        server.setFile("second.png", png)
        let worker = try WorkerProcess()
        worker.request(1, "configure", ["decodeMemoryBytes": 1_048_576])
        _ = try await worker.response(1)
        for name in ["first", "second"] {
            worker.request(2, "download", [
                "url": .string(server.url("/files/\(name).png?chunk=500&pauseAt=\(png.count / 2)&gate=\(name)")), "token": .string(name),
                "progressive": true, "output": ["format": "rgba", "delivery": "none", "partialIntervalMs": 0],
                // Held at the gate for as long as a loaded machine takes to check: no idle timeout.
                "timeoutMs": 300_000,
            ])
        }
        // Whichever header came first holds the memory and sends partial images.
        let first = try await worker.waitFor("a partial image") { $0["method"] == .string(WorkerEvent.partialImage) }
        let holder = first["params"]?["token"]?.stringValue ?? ""
        let other = holder == "first" ? "second" : "first"
        // Both bodies are held at the gates: one progressive decode holds memory, the other declined.
        var stage: JSONValue?
        for attempt in 0..<100 {
            worker.request(100 + attempt, "status", ["limit": 0])
            stage = try await worker.response(100 + attempt)["result"]?["decodeStage"]
            let received = [holder, other].map { name in
                worker.events(.string(name)).compactMap { $0["params"]?["receivedBytes"]?.integerValue }.max() ?? 0
            }
            // Both headers are in (the first 500-byte chunk holds one): the second was declined.
            if stage?["progressive"] == 1, received.allSatisfy({ $0 >= 500 }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(stage?["progressive"] == 1, "\(String(describing: stage))")
        #expect((stage?["bitmapBytes"]?.integerValue ?? 0) >= 700 * 700 * 4)
        server.openGate("first")
        server.openGate("second")
        for name in ["first", "second"] {
            let completed = try await worker.completion(.string(name))
            #expect(completed["params"]?["outcome"] == "success", "\(completed)")
            #expect(completed["params"]?["width"] == 700)
        }
        #expect(worker.events(.string(other)).allSatisfy { $0["method"] != .string(WorkerEvent.partialImage) }, "\(other) declined")
        worker.request(3, "status", ["limit": 0])
        let after = try await worker.response(3)["result"]?["decodeStage"]
        #expect(after?["progressive"] == 0 && after?["bitmapBytes"] == 0, "\(String(describing: after))")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    @Test func progressiveNeedsADecodedFormat() async throws {
        let worker = try WorkerProcess()
        worker.request(1, "download", ["url": "http://127.0.0.1:9/x.jpg", "progressive": true])
        #expect(try await worker.response(1)["error"]?["code"] == -32602)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
