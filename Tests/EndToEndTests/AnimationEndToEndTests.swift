import Foundation
import ImageDecoding
import ImageWorkerProtocol
import Testing
import TestSupport

/// `output.frames: "all"` through the real worker: raw frames one after the other with their
/// delays and loops, animated WebP and GIF files written, sized as asked, refused by the frame
/// and pixel limits, and refused with formats that hold one image.
@Suite struct AnimationEndToEndTests {
    static let corpus = WorkerProcess.repositoryRoot.appendingPathComponent("Tests/Corpora")
    static let files = ["gif/samples_moon_impact.gif", "webp-animated/animated_random_lossy.webp", "avif/colors-animated-8bpc.avif",
                        "gif/samples_sample_1.gif", "gif-animated/dispose_bgnd.gif"]

    func server() async throws -> TestHTTPServer {
        let server = try await TestHTTPServer.start()
        for path in Self.files {
            server.setFile(URL(fileURLWithPath: path).lastPathComponent, Array(try Data(contentsOf: Self.corpus.appendingPathComponent(path))))
        }
        return server
    }

    static func allFrames(_ path: String, shape: @escaping (DecodedImage) -> DecodedImage) throws -> DecodedImage {
        let data = Array(try Data(contentsOf: corpus.appendingPathComponent(path)))
        var options = DecodeOptions()
        options.frames = .all
        let frames = try #require(try AnimationDecoder.frames(data, options: options))
        return try AnimationDecoder.decode(data, frames: frames, options: options, shape: shape)
    }

    /// Every frame as raw pixels, each the library's decode of it at the size asked; delays,
    /// loops and the frame count in an event the schema accepts.
    @Test(arguments: [("gif/samples_moon_impact.gif", 14, 10), ("webp-animated/animated_random_lossy.webp", 4, 0)])
    func everyFrameAsRawPixels(_ path: String, frames: Int, loops: Int) async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        let name = URL(fileURLWithPath: path).lastPathComponent
        worker.request(1, "download", [
            "url": .string(server.url("/files/\(name)")), "token": "a",
            "output": ["format": "rgba", "delivery": "inline", "frames": "all", "maxPixelSize": 48],
        ])
        let done = try #require(try await worker.completion("a")["params"])
        #expect(done["frames"] == .int(Int64(frames)))
        #expect(done["frameCount"] == .int(Int64(frames)))
        #expect(done["loopCount"] == .int(Int64(loops)))
        let data = Array(try #require(done["data"]?.stringValue.flatMap { Data(base64Encoded: $0) }))
        let width = Int(try #require(done["width"]?.integerValue))
        let height = Int(try #require(done["height"]?.integerValue))
        #expect(max(width, height) == 48)
        #expect(data.count == frames * height * width * 4)
        let expected = try Self.allFrames(path) { frame in
            let size = ImageResampler.fittedSize(width: frame.width, height: frame.height, maxPixelSize: 48, maxPixelCount: nil)
            return ImageResampler.resize(frame, width: size.width, height: size.height)
        }
        #expect(data == Array(expected.allFramePixels.joined()))
        #expect(done["delaysMs"] == .array((expected.animation?.delaysMs ?? []).map { .int(Int64($0)) }))
        let problems = try E2E.schemas().validate(try #require(worker.events("a").last), against: "events/download-completed.schema.json")
        #expect(problems == [], "\(problems)")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// An animated WebP and a GIF written in a box (cover), every frame there: webpmux and the
    /// worker's own decoder read them back.
    @Test func animatedFilesAreWritten() async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let out = try E2E.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let worker = try WorkerProcess()
        for (n, format) in ["webp", "gif"].enumerated() {
            worker.request(n + 1, "download", [
                "url": .string(server.url("/files/samples_moon_impact.gif?\(format)")), "token": .string(format),
                "output": [
                    "format": .string(format), "delivery": "file", "dir": .string(out.path), "name": .string("moon.\(format)"),
                    "frames": "all", "width": 64, "height": 48, "position": "entropy",
                ],
            ])
            let done = try #require(try await worker.completion(.string(format))["params"])
            #expect(done["frames"] == 14)
            let file = Array(try Data(contentsOf: URL(fileURLWithPath: try #require(done["path"]?.stringValue))))
            var options = DecodeOptions()
            options.frames = .all
            let frames = try #require(try AnimationDecoder.frames(file, options: options), "\(format)")
            #expect((frames.width, frames.height) == (64, 48))
            #expect(frames.loopCount == 10)
            // (WebP's animation encoder merges a frame identical to the one before into it.)
            #expect(format == "gif" ? frames.count == 14 : frames.count > 1 && frames.count <= 14)
            let back = try AnimationDecoder.decode(file, frames: frames, options: options) { $0 }
            #expect((back.animation?.delaysMs ?? []).reduce(0, +) == 14 * 150)
        }
        let info = String(decoding: try ChildExit.output(of: "/usr/bin/env", ["webpmux", "-info", out.appendingPathComponent("moon.webp").path]).stdout, as: UTF8.self)
        #expect(info.contains("Canvas size: 64 x 48"))
        #expect(info.contains("Loop Count : 10"))
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// A still image: one frame of 0 ms; an AVIF sequence: its images, progressive or not.
    @Test func stillImagesAndSequences() async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/samples_sample_1.gif")), "token": "still",
            "output": ["format": "rgb", "delivery": "inline", "frames": "all"],
        ])
        let still = try #require(try await worker.completion("still")["params"])
        #expect(still["frames"] == 1)
        #expect(still["delaysMs"] == [0])
        #expect(still["animated"] == nil)
        worker.request(2, "download", [
            "url": .string(server.url("/files/colors-animated-8bpc.avif")), "token": "avif", "progressive": true,
            "output": ["format": "gray", "delivery": "inline", "frames": "all"],
        ])
        let avif = try #require(try await worker.completion("avif")["params"])
        #expect(avif["frames"] == 5)
        #expect(avif["delaysMs"] == [33, 33, 33, 33, 33])
        #expect(Data(base64Encoded: try #require(avif["data"]?.stringValue))?.count == 5 * 150 * 150)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// Tokens of one fetch that differ only in their frames do not share a decode; the first
    /// frame of every frame is the one-frame token's image.
    @Test func firstAndAllDoNotShareADecode() async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        for (n, frames) in ["first", "all"].enumerated() {
            worker.request(n + 1, "download", [
                "url": .string(server.url("/files/dispose_bgnd.gif")), "token": .string(frames),
                "output": ["format": "rgba", "delivery": "inline", "frames": .string(frames)],
            ])
        }
        let first = try #require(try await worker.completion("first")["params"])
        let all = try #require(try await worker.completion("all")["params"])
        let one = try #require(first["data"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        let every = try #require(all["data"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        #expect(first["frames"] == nil)
        #expect(every.count == 5 * one.count)
        #expect(every.prefix(one.count) == one)
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }

    /// More frames than `maxFrames`, or frames x canvas over `maxPixels`, fail the token with the
    /// limit's error; a format of one image is refused with the request.
    @Test func limitsAndFormats() async throws {
        let server = try await server()
        defer { Task { await server.shutdown() } }
        let worker = try WorkerProcess()
        worker.request(1, "download", [
            "url": .string(server.url("/files/samples_moon_impact.gif")), "token": "png",
            "output": ["format": "png", "delivery": "inline", "frames": "all"],
        ])
        let refused = try await worker.response(1)
        #expect(refused["error"]?["code"] == -32602)
        #expect(refused["error"]?["message"]?.stringValue?.contains("output.frames \"all\" goes with output.format") == true)
        worker.request(2, "configure", ["maxFrames": 13])
        _ = try await worker.response(2)
        worker.request(3, "download", [
            "url": .string(server.url("/files/samples_moon_impact.gif?frames")), "token": "frames",
            "output": ["format": "rgb", "delivery": "inline", "frames": "all"],
        ])
        let frames = try #require(try await worker.completion("frames")["params"])
        #expect(frames["error"]?["data"]?["name"] == "LimitExceeded")
        #expect(frames["error"]?["data"]?["limit"] == "frames")
        #expect(frames["error"]?["data"]?["maximum"] == 13)
        worker.request(4, "configure", ["maxFrames": 50000, "maxPixels": .int(14 * 116 * 100 - 1)])
        _ = try await worker.response(4)
        worker.request(5, "download", [
            "url": .string(server.url("/files/samples_moon_impact.gif?pixels")), "token": "pixels",
            "output": ["format": "rgb", "delivery": "inline", "frames": "all", "maxPixelSize": 16],
        ])
        let pixels = try #require(try await worker.completion("pixels")["params"])
        #expect(pixels["error"]?["data"]?["name"] == "LimitExceeded")
        #expect(pixels["error"]?["data"]?["limit"] == "pixels")
        #expect(pixels["error"]?["data"]?["maximum"] == .int(14 * 116 * 100 - 1))
        #expect(pixels["error"]?["message"]?.stringValue?.contains("14 frames of 116x100") == true)
        // The first frame alone is within the limit.
        worker.request(6, "download", [
            "url": .string(server.url("/files/samples_moon_impact.gif?first")), "token": "first",
            "output": ["format": "rgb", "delivery": "inline", "maxPixelSize": 16],
        ])
        #expect(try await worker.completion("first")["params"]?["outcome"] == "success")
        worker.closeStdin()
        #expect(try await worker.waitForExit() == 0)
    }
}
