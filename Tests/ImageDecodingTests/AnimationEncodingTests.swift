import Foundation
import ImageDecoding
import Testing
import TestSupport

/// Frames written as one file (`ImageEncoders.encodeFrames`): an animated WebP with libwebp's
/// animation encoder, a GIF with giflib; read back by `webpmux -info`, Pillow's `ImageSequence`
/// and this worker's own decoder.
@Suite struct AnimationEncodingTests {
    static func frames(_ path: String) throws -> DecodedImage {
        try AnimationDecodingTests.allFrames(path)
    }

    /// A lossless animated WebP holds every frame exactly, its delays and its loop count, as
    /// webpmux lists them.
    @Test func aLosslessAnimatedWebPKeepsEveryFrame() throws {
        let source = try Self.frames("webp-animated/animated_random_lossless.webp")
        let file = try ImageEncoders.encodeFrames(source, as: .webp(quality: 100, lossless: true))
        let frames = try #require(try AnimationDecoder.frames(file, options: DecodeOptions()))
        #expect(frames.count == 3)
        let back = try AnimationDecoder.decode(file, frames: frames, options: { var o = DecodeOptions(); o.frames = .all; return o }()) { $0 }
        let same = back.allFramePixels == source.allFramePixels
        #expect(same)
        #expect(back.animation?.delaysMs == source.animation?.delaysMs)
        #expect(back.animation?.loopCount == 0)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("anim-\(UUID().uuidString).webp")
        try Data(file).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let info = String(decoding: try #require(try Corpora.output(of: "webpmux", ["-info", path.path])), as: UTF8.self)
        #expect(info.contains("Number of frames: 3"))
        #expect(info.contains("Loop Count : 0"))
    }

    /// A GIF of a GIF's frames: as many frames, the same delays and loops (Pillow reads them), the
    /// pixels within the palette's rounding (giflib's median cut works on 5 bits a channel).
    @Test func aGIFKeepsFramesDelaysAndLoops() throws {
        let source = try Self.frames("gif/samples_moon_impact.gif")
        let file = try ImageEncoders.encodeFrames(source, as: .gif)
        let path = "gif-animated/.encoded-\(UUID().uuidString).gif"
        let url = Corpora.local.appendingPathComponent(path)
        try Data(file).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let reference = try #require(try AnimationDecodingTests.reference(path))
        #expect(reference.frames.count == 14)
        #expect(reference.delays == Array(repeating: 150, count: 14))
        #expect(reference.loop == 10)
        for (index, (frame, expected)) in zip(AnimationDecodingTests.split(source), reference.frames).enumerated() {
            let differences = zip(frame.pixels, expected.pixels).map { abs(Int($0) - Int($1)) }
            #expect(differences.max() ?? 0 <= 8, "frame \(index)")
            #expect(Double(differences.reduce(0, +)) / Double(differences.count) < 2, "frame \(index)")
        }
    }

    /// A photo of many colours: within Pillow's own median cut (`quantize(256)`) of it, by the
    /// mean difference from the source.
    @Test func aPhotoIsQuantizedAsWellAsPillowDoes() throws {
        guard Corpora.present else { return }
        let path = Corpora.root.appendingPathComponent("jpeg/testorig.jpg").path
        var options = DecodeOptions()
        options.layout = .rgb
        let source = try ImageDecoders.decode(Array(try Data(contentsOf: URL(fileURLWithPath: path))), options: options)
        let back = try ImageDecoders.decode(try ImageEncoders.encode(source, as: .gif), options: options)
        let ours = Double(zip(source.pixels, back.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +)) / Double(source.pixels.count)
        let script = """
            import sys
            from PIL import Image, ImageChops, ImageStat
            im = Image.open(sys.argv[1]).convert("RGB")
            q = im.quantize(256).convert("RGB")
            print(sum(ImageStat.Stat(ImageChops.difference(im, q)).mean) / 3)
            """
        let out = try #require(try Corpora.output(of: "/usr/bin/python3", ["-c", script, path]))
        let pillow = try #require(Double(String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(ours <= pillow * 1.25 + 0.5, "ours \(ours), Pillow's \(pillow)")
    }

    /// Transparency survives: pixels under half opacity become the transparent index, and each
    /// frame clears the canvas before the next (a browser then shows each frame as it was).
    @Test func aTransparentAnimationStaysTransparent() throws {
        let source = try Self.frames("gif-animated/dispose_bgnd_transparency.gif")
        let file = try ImageEncoders.encodeFrames(source, as: .gif)
        var options = DecodeOptions()
        options.frames = .all
        let frames = try #require(try AnimationDecoder.frames(file, options: options))
        let back = try AnimationDecoder.decode(file, frames: frames, options: options) { $0 }
        #expect(back.frameCount == source.frameCount)
        for (a, b) in zip(back.allFramePixels, source.allFramePixels) {
            let alphas = stride(from: 3, to: a.count, by: 4).allSatisfy { a[$0] == b[$0] }
            #expect(alphas)
        }
    }

    /// One frame: a still GIF (no loop block), as `format: gif` writes without every frame.
    @Test func aStillGIF() throws {
        let source = try ImageDecoders.decode(try Corpora.localBytes("gif/samples_sample_1.gif"))
        let file = try ImageEncoders.encode(source, as: .gif)
        let back = try ImageDecoders.decode(file)
        #expect((back.width, back.height) == (source.width, source.height))
        #expect(back.animation == nil)
        #expect(GIFDecodingTests.sameAsSeen(back, source))
    }
}
