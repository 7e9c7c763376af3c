import Foundation
import ImageDecoding
import Testing
import TestSupport

/// Every frame of GIF, animated WebP and AVIF sequences (`DecodeOptions.frames` `.all`), against
/// references nobody here wrote: Pillow's `ImageSequence` (Debian's python3-pil) on the WebPs and
/// on the GIFs it composites as browsers do, libwebp's `gif2webp` (a browser's compositing:
/// disposal to the background clears to transparent) on every GIF, `avifdec --index` on AVIF,
/// `webpmux -info` for delays and loops. Files: image-rs's and Pillow's test images
/// (`Tests/Corpora/gif`, `gif-animated`, `webp-animated`), libavif's (`avif`).
@Suite struct AnimationDecodingTests {
    static let gifs = Corpora.localFiles("gif-animated", suffix: ".gif").filter { !$0.contains("bomb") }
        + ["gif/samples_anim-gr.gif", "gif/samples_beacon.gif", "gif/samples_moon_impact.gif"]
    /// GIFs Pillow composites as browsers do (none clears a frame to its background colour, nor
    /// leaves the canvas outside the first frame opaque).
    static let pillowGIFs = [
        "gif/samples_anim-gr.gif", "gif/samples_moon_impact.gif", "gif-animated/dispose_none.gif", "gif-animated/dispose_prev.gif",
        "gif-animated/iss634.gif", "gif-animated/missing_background.gif", "gif-animated/transparent_dispose.gif",
        "gif-animated/different_transparency.gif", "gif-animated/dispose_prev_first_frame.gif",
    ]
    /// GIFs gif2webp converts frame for frame (it merges moon_impact's repeated frames, shows
    /// dispose_prev_first_frame's first frame whole, and refuses test_extents_transparency's
    /// stray bytes after its first frame, which browsers and the worker end the file at).
    static let gif2webpGIFs = gifs.filter { path in
        !["samples_moon_impact", "dispose_prev_first_frame", "test_extents_transparency"].contains { path.contains($0) }
    }
    static let webps = Corpora.localFiles("webp-animated", suffix: ".webp").filter { $0.contains("animated_") } + ["gif-animated/iss634.webp"]

    /// Frames as the reference reads them: RGBA each, with Pillow's durations and loop; `gif2webp`
    /// (lossless, its default) first when `viaGif2webp`. Nil when python3 with Pillow (or gif2webp) is not there.
    static func reference(_ path: String, viaGif2webp: Bool = false) throws -> (frames: [DecodedImage], delays: [Int], loop: Int?)? {
        let script = """
            import json, subprocess, sys, tempfile
            from PIL import Image, ImageSequence
            path = sys.argv[1]
            if sys.argv[2] == "1":
                out = tempfile.mktemp(suffix=".webp")
                subprocess.run(["gif2webp", "-quiet", path, "-o", out], check=True)
                path = out
            im = Image.open(path)
            frames = [f.convert("RGBA") for f in ImageSequence.Iterator(im)]
            im = Image.open(path)
            delays = []
            for i in range(getattr(im, "n_frames", 1)):
                im.seek(i)
                delays.append(im.info.get("duration", 0))
            head = {"w": im.size[0], "h": im.size[1], "n": len(frames), "delays": delays, "loop": im.info.get("loop")}
            sys.stdout.buffer.write(json.dumps(head).encode() + b"\\n" + b"".join(f.tobytes() for f in frames))
            """
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
            let out = try Corpora.output(of: "/usr/bin/python3", ["-c", script, Corpora.local.appendingPathComponent(path).path, viaGif2webp ? "1" : "0"]),
            let newline = out.firstIndex(of: 0x0A),
            let head = try JSONSerialization.jsonObject(with: Data(out[..<newline])) as? [String: Any],
            let width = head["w"] as? Int, let height = head["h"] as? Int, let count = head["n"] as? Int
        else { return nil }
        let size = width * height * 4
        guard out.count - newline - 1 == size * count else { return nil }
        let frames = (0..<count).map { index in
            let start = newline + 1 + index * size
            return DecodedImage(width: width, height: height, layout: .rgba, pixels: Array(out[start..<(start + size)]), format: .gif)
        }
        return (frames, (head["delays"] as? [Any])?.map { ($0 as? Int) ?? 0 } ?? [], head["loop"] as? Int)
    }

    static func allFrames(_ path: String, _ configure: (inout DecodeOptions) -> Void = { _ in }) throws -> DecodedImage {
        var options = DecodeOptions()
        options.frames = .all
        configure(&options)
        let data = try Corpora.localBytes(path)
        guard let frames = try AnimationDecoder.frames(data, options: options) else { return try ImageDecoders.decode(data, options: options) }
        return try AnimationDecoder.decode(data, frames: frames, options: options) { $0 }
    }

    /// The image's frames as images of their own.
    static func split(_ image: DecodedImage) -> [DecodedImage] {
        image.allFramePixels.map { DecodedImage(width: image.width, height: image.height, layout: image.layout, pixels: $0, format: .gif) }
    }

    @Test func theCorpusIsThere() {
        #expect(Self.gifs.count == 16)
        #expect(Self.gif2webpGIFs.count == 13)
        #expect(Self.webps.count == 3)
    }

    /// Every GIF's frames as libwebp's gif2webp composites them (what a browser shows).
    @Test(arguments: gif2webpGIFs)
    func gifFramesMatchGif2webp(_ path: String) throws {
        let image = try Self.allFrames(path)
        // (The reference tools are among the test's system packages: required.)
        let reference = try #require(try Self.reference(path, viaGif2webp: true))
        let frames = Self.split(image)
        #expect(frames.count == reference.frames.count, "\(path)")
        for (index, (frame, expected)) in zip(frames, reference.frames).enumerated() {
            let same = GIFDecodingTests.sameAsSeen(frame, expected)
            #expect(same, "\(path) frame \(index)")
        }
    }

    /// Where Pillow composites as browsers do: its frames, durations and loop count.
    @Test(arguments: pillowGIFs)
    func gifFramesMatchPillow(_ path: String) throws {
        let image = try Self.allFrames(path)
        let reference = try #require(try Self.reference(path))
        #expect(Self.split(image).count == reference.frames.count)
        for (index, (frame, expected)) in zip(Self.split(image), reference.frames).enumerated() {
            let same = GIFDecodingTests.sameAsSeen(frame, expected)
            #expect(same, "\(path) frame \(index)")
        }
        #expect(image.animation?.delaysMs ?? [0] == reference.delays, "\(path)")
        #expect(image.animation?.loopCount == reference.loop, "\(path)")
    }

    /// The first loop count a GIF gives is the one (as Pillow reads it), whole or every frame.
    @Test func theFirstLoopCountHolds() throws {
        #expect(try Self.allFrames("gif-animated/duplicate_number_of_loops.gif").animation?.loopCount == 2)
        #expect(try ImageDecoders.decode(try Corpora.localBytes("gif-animated/duplicate_number_of_loops.gif")).animation?.loopCount == 2)
    }

    /// The first of every frame is the first-frame decode's image.
    @Test(arguments: gifs + webps)
    func theFirstFrameIsTheImage(_ path: String) throws {
        let first = try ImageDecoders.decode(try Corpora.localBytes(path))
        let all = try Self.allFrames(path)
        let same = all.pixels == first.pixels
        #expect(same, "\(path)")
        #expect((all.width, all.height) == (first.width, first.height))
    }

    /// Animated WebPs as Pillow (libwebp's animation decoder) reads them; delays and loops as
    /// webpmux lists them.
    @Test(arguments: webps)
    func webpFramesMatchPillowAndWebpmux(_ path: String) throws {
        let image = try Self.allFrames(path)
        let reference = try #require(try Self.reference(path))
        let same = Self.split(image) == reference.frames
        #expect(same, "\(path)")
        let info = try #require(try Corpora.output(of: "webpmux", ["-info", Corpora.local.appendingPathComponent(path).path]))
        let lines = String(decoding: info, as: UTF8.self).split(separator: "\n")
        // "  1:    99    87    no        0        0      150       none    no ..." (duration: the 7th field)
        let delays = lines.filter { $0.range(of: #"^\s*\d+:"#, options: .regularExpression) != nil }
            .compactMap { Int($0.split(whereSeparator: \.isWhitespace)[6]) }
        #expect(image.animation?.delaysMs == delays, "\(path)")
        let loop = lines.first { $0.contains("Loop Count") }.flatMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) }
        #expect(image.animation?.loopCount == loop)
    }

    /// Each image of an AVIF sequence as avifdec decodes it (`--index`), within 1 level (their
    /// YUV to RGB may round apart), the sequence's timing as delays.
    @Test func avifSequenceMatchesAvifdec() throws {
        let path = "avif/colors-animated-8bpc.avif"
        let image = try Self.allFrames(path) { $0.layout = .rgb }
        #expect(image.frameCount == 5)
        #expect(image.animation?.delaysMs == [33, 33, 33, 33, 33])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("avifdec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, frame) in Self.split(image).enumerated() {
            let png = directory.appendingPathComponent("\(index).png").path
            _ = try #require(try Corpora.output(of: "avifdec", ["--index", "\(index)", Corpora.local.appendingPathComponent(path).path, png]))
            let data = try #require(FileManager.default.contents(atPath: png))
            let expected = try ImageDecoders.decode(Array(data), options: { var o = DecodeOptions(); o.layout = .rgb; return o }())
            let close = zip(frame.pixels, expected.pixels).allSatisfy { abs(Int($0) - Int($1)) <= 1 }
            #expect(close, "frame \(index)")
        }
    }

    /// Every frame counts: more frames than `maxFrames`, or frames × canvas over `maxPixels`,
    /// are refused from the headers, before any pixel buffer.
    @Test func everyFrameCountsAgainstTheLimits() throws {
        let data = try Corpora.localBytes("gif/samples_moon_impact.gif")  // 14 frames of 116 x 100
        var options = DecodeOptions()
        options.frames = .all
        options.maxFrames = 13
        #expect(throws: DecodeError.self) { _ = try AnimationDecoder.frames(data, options: options) }
        options.maxFrames = 14
        options.maxPixels = 14 * 116 * 100 - 1
        #expect { _ = try AnimationDecoder.frames(data, options: options) } throws: { Corpora.isLimit($0, saying: "14 frames of 116x100") }
        options.maxPixels = 14 * 116 * 100
        #expect(try AnimationDecoder.frames(data, options: options)?.count == 14)
    }

    /// 10,000 frames of one pixel on a 1000 x 1000 screen: 10^10 pixels to show, refused by the
    /// walk over the blocks; on a 10,000 x 10,000 screen, refused as a bomb from the first frame.
    @Test func tenThousandFramesOfALargeCanvasAreRefused() throws {
        func gif(side: Int) -> [UInt8] {
            var gif: [UInt8] = Array("GIF89a".utf8) + [UInt8(side & 0xFF), UInt8(side >> 8), UInt8(side & 0xFF), UInt8(side >> 8), 0x80, 0, 0]
            gif += [0, 0, 0, 255, 255, 255]
            for _ in 0..<10_000 {
                // A 1 x 1 frame: descriptor, code size 2, one sub-block (clear, index 0, end), terminator.
                gif += [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0]
            }
            return gif + [0x3B]
        }
        var options = DecodeOptions()
        options.frames = .all
        #expect { _ = try AnimationDecoder.frames(gif(side: 1000), options: options) } throws: {
            Corpora.isLimit($0, saying: "10000 frames of 1000x1000")
        }
        #expect { _ = try AnimationDecoder.frames(gif(side: 10_000), options: options) } throws: { Corpora.isLimit($0) }
        options.maxPixels = 1 << 40
        // (Within a larger budget, the walk counts them all.)
        #expect(try AnimationDecoder.frames(gif(side: 1000), options: options)?.count == 10_000)
    }

    /// A 30-byte GIF announcing a 10,000 x 10,000 frame is refused before its canvas is made:
    /// its data cannot hold the frame (an LZW code stands for 4096 pixels at most).
    @Test func aFewBytesCannotAskForAHugeCanvas() throws {
        var gif: [UInt8] = Array("GIF89a".utf8) + [0x10, 0x27, 0x10, 0x27, 0x00, 0, 0]
        gif += [0x2C, 0, 0, 0, 0, 0x10, 0x27, 0x10, 0x27, 0, 2, 3, 0x44, 0x01, 0x00, 0, 0x3B]
        #expect(gif.count == 30)
        for frames in FrameSelection.allCases {
            var options = DecodeOptions()
            options.frames = frames
            #expect(performing: { _ = try ImageDecoders.decode(gif, options: options) }, throws: { error in
                guard case .truncated(let message)? = error as? DecodeError else { return false }
                return message.contains("cannot be held in 3 bytes")
            })
        }
    }

    /// A still GIF cut where its frame's data is whole but its blocks are not closed (the last two
    /// bytes gone) is truncated whichever frames are asked (giflib reads the first frame so); an
    /// animation cut inside a later frame delivers the frames before it.
    @Test func aCutFileShowsTheFramesItHolds() throws {
        let still = Array(try Corpora.localBytes("gif/samples_sample_1.gif").dropLast(2))
        var options = DecodeOptions()
        for frames in FrameSelection.allCases {
            options.frames = frames
            #expect(performing: { _ = try ImageDecoders.decode(still, options: options) }, throws: { error in
                guard case .truncated(let message)? = error as? DecodeError else { return false }
                return message.contains("inside the first frame")
            })
        }
        let animation = try Corpora.localBytes("gif/samples_moon_impact.gif")
        let cut = Array(animation.prefix(animation.count * 2 / 3))
        options.frames = .all
        let frames = try #require(try AnimationDecoder.frames(cut, options: options))
        let image = try AnimationDecoder.decode(cut, frames: frames, options: options) { $0 }
        let all = try Self.allFrames("gif/samples_moon_impact.gif")
        #expect(image.frameCount >= 2 && image.frameCount < 14)
        #expect(image.allFramePixels == Array(all.allFramePixels.prefix(image.frameCount)))
        #expect(image.animation?.delaysMs.count == image.frameCount)
    }
}
