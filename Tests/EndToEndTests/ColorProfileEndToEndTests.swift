import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// `output.colorProfile` through the real worker: sRGB by default (whole, scaled, boxed and
/// progressive decodes alike), `keep` with the profile in the event and embedded in written files.
@Suite struct ColorProfileEndToEndTests {
    static let corpus = WorkerProcess.repositoryRoot.appendingPathComponent("Tests/Corpora/color")

    func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: Self.corpus.appendingPathComponent(name))) }

    func server() async throws -> TestHTTPServer {
        let server = try await TestHTTPServer.start()
        for name in ["p3.png", "xmp_test.jpg", "Channel_digital_image_CMYK_color.jpg"] { server.setFile(name, try bytes(name)) }
        return server
    }

    static func data(_ event: JSONValue?) throws -> [UInt8] {
        Array(try #require(event?["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }))
    }

    static func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return .infinity }
        return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
    }

    func decode(_ name: String, _ handling: ColorHandling, layout: PixelLayout = .rgb) throws -> DecodedImage {
        var options = DecodeOptions()
        options.layout = layout
        options.colorProfile = handling
        return try ImageDecoders.decode(try bytes(name), options: options)
    }

    @Test func pixelsAreSRGBUnlessKept() async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        for (n, name) in ["p3.png", "xmp_test.jpg", "Channel_digital_image_CMYK_color.jpg"].enumerated() {
            let url = JSONValue.string(server.url("/files/\(name)"))
            worker.request(10 * n + 1, "download", ["url": url, "token": .string("s\(n)"), "output": ["format": "rgb", "delivery": "inline"]])
            worker.request(10 * n + 2, "download", [
                "url": url, "token": .string("k\(n)"), "output": ["format": "rgb", "delivery": "inline", "colorProfile": "keep"],
            ])
            let converted = try await worker.completion(.string("s\(n)"))["params"]
            let kept = try await worker.completion(.string("k\(n)"))["params"]
            #expect(try Self.data(converted) == (try decode(name, .srgb)).pixels, "\(name)")
            #expect(try Self.data(kept) == (try decode(name, .keep)).pixels, "\(name)")
            #expect(converted?["iccProfile"] == nil)
            let profile = try #require(kept?["iccProfile"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            #expect(Array(profile) == ColorProfile.read(try bytes(name), format: ImageFormat.detect(try bytes(name))!).icc)
        }
        // One decode per colour handling: tokens that differ only in it do not share one.
        worker.request(99, "status")
        #expect(try await worker.response(99)["result"]?["decodes"] == 6)
        // The event with a profile is what the schema says.
        let kept = try #require(worker.events("k0").last)
        let problems = try E2E.schemas().validate(kept, against: "events/download-completed.schema.json")
        #expect(problems == [], "\(problems)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A file written with `keep` carries the profile (a JPEG's APP2, a PNG's iCCP, a WebP's ICCP);
    /// one written in sRGB carries none.
    @Test(arguments: ["png", "jpeg", "webp"])
    func writtenFilesCarryTheKeptProfile(format: String) async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let worker = try WorkerProcess()
        let url = JSONValue.string(server.url("/files/xmp_test.jpg"))
        for handling in ["keep", "srgb"] {
            worker.request(1, "download", [
                "url": url, "token": .string(handling),
                "output": [
                    "format": .string(format), "delivery": "file", "dir": .string(out.path), "name": .string("\(handling).\(format)"),
                    "maxPixelSize": 300, "colorProfile": .string(handling),
                ],
            ])
            let done = try await worker.completion(.string(handling))["params"]
            let file = Array(try Data(contentsOf: URL(fileURLWithPath: try #require(done?["path"]?.stringValue))))
            let detected = try #require(ImageFormat.detect(file))
            let profile = ColorProfile.read(file, format: detected).icc
            if handling == "keep" {
                #expect(profile == ColorProfile.read(try bytes("xmp_test.jpg"), format: .jpeg).icc, "\(format)")
                // Still a valid file of its format, at the size asked.
                let decoded = try ImageDecoders.decode(file)
                #expect(max(decoded.width, decoded.height) == 300)
            } else {
                #expect(profile == nil)
            }
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A progressive download's partial and final images are converted too (the final one is
    /// the whole decode's), and a box's.
    @Test func progressiveAndBoxedImagesAreConverted() async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/xmp_test.jpg?chunk=65536&delayMs=5")), "token": "p", "progressive": true,
            "output": ["format": "rgb", "delivery": "inline", "partialIntervalMs": 0],
        ])
        worker.request(2, "download", [
            "url": .string(server.url("/files/xmp_test.jpg?box")), "token": "b",
            "output": ["format": "rgb", "delivery": "inline", "width": 64, "height": 64],
        ])
        let progressive = try await worker.completion("p")["params"]
        let reference = try decode("xmp_test.jpg", .srgb)
        let stored = try decode("xmp_test.jpg", .keep)
        let final = try Self.data(progressive)
        #expect(Self.meanDifference(final, reference.pixels) < 0.5)
        #expect(Self.meanDifference(final, stored.pixels) > 0.5)
        let partials = worker.events("p").filter { $0["method"] == .string(WorkerEvent.partialImage) }.compactMap { $0["params"] }
        if let last = partials.last, let rows = last["filledRows"]?.integerValue, rows == reference.height {
            #expect(Self.meanDifference(try Self.data(last), reference.pixels) < 0.5)
        }
        // Kept colours: partial images as stored, and the profile once, in the completed event.
        worker.request(3, "download", [
            "url": .string(server.url("/files/xmp_test.jpg?chunk=65536&delayMs=5&keep")), "token": "k", "progressive": true,
            "output": ["format": "rgb", "delivery": "inline", "partialIntervalMs": 0, "colorProfile": "keep", "maxPixelSize": 200],
        ])
        let kept = try await worker.completion("k")["params"]
        #expect(kept?["iccProfile"] != nil)
        let schemas = try E2E.schemas()
        let keptPartials = worker.events("k").filter { $0["method"] == .string(WorkerEvent.partialImage) }
        #expect(!keptPartials.isEmpty)
        for partial in keptPartials {
            #expect(partial["params"]?["iccProfile"] == nil)
            #expect(schemas.validate(partial, against: "events/download-partialImage.schema.json") == [])
        }
        let boxed = try Self.data(try await worker.completion("b")["params"])
        var options = DecodeOptions()
        options.layout = .rgb
        for handling in [ColorHandling.srgb, .keep] {
            options.colorProfile = handling
            let plan = FitPlan(source: (reference.width, reference.height), width: 64, height: 64)
            let image = try ImageDecoders.decode(try bytes("xmp_test.jpg"), options: options) { _, _ in plan.decodeSize }
            let shaped = plan.apply(to: image, upright: false, background: .black)
            if handling == .srgb { #expect(Self.meanDifference(boxed, shaped.pixels) < 1.0) } else { #expect(Self.meanDifference(boxed, shaped.pixels) > 0.5) }
        }
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
