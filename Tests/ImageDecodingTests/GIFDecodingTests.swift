import Foundation
import ImageDecoding
import Testing
import TestSupport

/// GIF against Pillow (Debian's python3-pil) on image-rs's GIF test files, and on GIFs made here
/// for what those lack: a first frame smaller than its screen, and one that reaches beyond it.
@Suite struct GIFDecodingTests {
    static let samples = Corpora.localFiles("gif", suffix: ".gif").filter { !$0.contains("crashtest_") && !$0.contains("stall_") }
    static let hostile = Corpora.localFiles("gif", suffix: ".gif").filter { $0.contains("crashtest_") || $0.contains("stall_") }

    /// Pillow's first frame as RGBA, or nil when Pillow (for /usr/bin/python3) is not there.
    static func pillow(_ path: String) throws -> DecodedImage? {
        let script = """
            import sys
            from PIL import Image
            im = Image.open(sys.argv[1]).convert("RGBA")
            sys.stdout.buffer.write(b"%d %d\\n" % im.size + im.tobytes())
            """
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
            let out = try Corpora.output(of: "/usr/bin/python3", ["-c", script, Corpora.local.appendingPathComponent(path).path]),
            let newline = out.firstIndex(of: 0x0A)
        else { return nil }
        let size = String(decoding: out[..<newline], as: UTF8.self).split(separator: " ").compactMap { Int($0) }
        guard size.count == 2, out.count - newline - 1 == size[0] * size[1] * 4 else { return nil }
        return DecodedImage(width: size[0], height: size[1], layout: .rgba, pixels: Array(out[(newline + 1)...]), format: .gif)
    }

    /// Equal as seen: the same alpha everywhere, the same colour wherever alpha is not 0 (Pillow
    /// keeps the palette's colour under a transparent pixel; the worker writes 0).
    static func sameAsSeen(_ a: DecodedImage, _ b: DecodedImage) -> Bool {
        guard a.width == b.width, a.height == b.height, a.layout == .rgba, b.layout == .rgba else { return false }
        for i in stride(from: 0, to: a.pixels.count, by: 4) {
            guard a.pixels[i + 3] == b.pixels[i + 3] else { return false }
            if a.pixels[i + 3] != 0, a.pixels[i..<(i + 3)] != b.pixels[i..<(i + 3)] { return false }
        }
        return true
    }

    @Test func theCorpusIsThere() {
        #expect(Self.samples.count == 13)
        #expect(Self.hostile.count == 4)
    }

    /// Each sample's first frame as Pillow shows it, whole and fed in pieces (partial frames on).
    @Test(arguments: samples)
    func samplesMatchPillow(_ path: String) throws {
        let data = try Corpora.localBytes(path)
        let whole = try ImageDecoders.decode(data)
        if let reference = try Self.pillow(path) {
            #expect(Self.sameAsSeen(whole, reference), "\(path)")
        }
        for chunk in [1, 7, 4096] {
            let (decoder, _) = try Corpora.feed(data, format: .gif, chunk: chunk)
            #expect(decoder.isComplete)
            #expect(decoder.currentImage() == whole, "\(path), chunk \(chunk)")
        }
    }

    /// Frames and loops as the files hold them (Pillow's n_frames and info["loop"]).
    @Test(arguments: [
        ("gif/samples_anim-gr.gif", 2, 0), ("gif/samples_beacon.gif", 2, 0), ("gif/samples_moon_impact.gif", 14, 10),
        ("gif/samples_interlaced.gif", 1, -1),
    ])
    func framesAndLoopsAreCounted(_ path: String, frames: Int, loops: Int) throws {
        let image = try ImageDecoders.decode(try Corpora.localBytes(path))
        if frames == 1 {
            #expect(image.animation == nil)
        } else {
            #expect(image.animation == Animation(frameCount: frames, loopCount: loops))
        }
    }

    /// An interlaced first frame arrives pass by pass, each row repeated below it meanwhile, and
    /// ends as the whole decode.
    @Test func anInterlacedFrameArrivesPassByPass() throws {
        let data = try Corpora.localBytes("gif/samples_interlaced.gif")
        let whole = try ImageDecoders.decode(data)
        let decoder = try ImageDecoders.makeIncremental(for: .gif)
        var seen: [(rows: Int, passes: Int)] = []
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + 1024)
            let progress = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
            if progress.contains(.pixels) { seen.append((decoder.filledRows, decoder.completedPasses)) }
            offset = end
        }
        #expect(seen.count >= 5)
        #expect(seen.map(\.rows) == seen.map(\.rows).sorted())
        #expect(Set(seen.map(\.passes)).count >= 3, "\(seen.map(\.passes))")
        #expect(seen.first!.passes < 4 && seen.first!.rows > 0, "a partial frame first")
        #expect(decoder.currentImage() == whole)
    }

    /// image-rs's crash and stall files: an error (or, within the limits, an image), promptly.
    @Test(arguments: hostile)
    func hostileFilesEndPromptly(_ path: String) throws {
        let data = try Corpora.localBytes(path)
        let started = ContinuousClock.now
        _ = try? ImageDecoders.decode(data)
        _ = try? Corpora.feed(data, format: .gif, chunk: 5)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func aScreenOfABillionPixelsIsRefusedFromTheHeader() throws {
        let data = try Corpora.localBytes("gif/stall_issue-101-infinite-empty-loop.gif")
        #expect {
            _ = try ImageDecoders.decode(data)
        } throws: { Corpora.isLimit($0) }
    }

    @Test func framesOverTheLimitAreRefused() throws {
        Corpora.expectFrameLimit("gif/samples_moon_impact.gif", maxFrames: 13, saying: "limit of 13 frames")
    }

    /// A 4x3 screen whose first frame, 2x2 at (1, 1), has a transparent colour: the screen
    /// around it and its transparent pixel are transparent; a second frame is counted.
    @Test func aFirstFrameSmallerThanItsScreenIsPlacedOnATransparentCanvas() throws {
        let gif = GIFBuilder(screen: (4, 3), palette: [(255, 0, 0), (0, 255, 0), (0, 0, 255), (9, 9, 9)])
            .frame(at: (1, 1), size: (2, 2), pixels: [0, 1, 3, 2], transparent: 3)
            .frame(at: (0, 0), size: (1, 1), pixels: [0])
            .finished
        let image = try ImageDecoders.decode(gif)
        #expect((image.width, image.height) == (4, 3))
        let clear: [UInt8] = [0, 0, 0, 0]
        let expected: [[UInt8]] = [
            clear, clear, clear, clear,
            clear, [255, 0, 0, 255], [0, 255, 0, 255], clear,
            clear, clear, [0, 0, 255, 255], clear,
        ]
        #expect(image.pixels == expected.flatMap { $0 })
        #expect(image.animation == Animation(frameCount: 2, loopCount: nil))
    }

    /// A first frame reaching beyond its screen enlarges the canvas (as browsers and Pillow do).
    /// A logical screen of 10000 x 10000 (at the default pixel limit) around a 1 x 1 frame is 400 MB
    /// of transparent canvas from a few dozen bytes: refused, whole and incrementally, before any
    /// canvas is allocated. A large canvas its first frame fills, or a sparse one of modest size,
    /// still decodes.
    @Test func aCanvasFarLargerThanItsFirstFrameIsRefusedAsABomb() throws {
        let bomb = GIFBuilder(screen: (10000, 10000), palette: [(1, 2, 3)]).frame(at: (0, 0), size: (1, 1), pixels: [0]).finished
        #expect(bomb.count < 60)
        func refused(_ error: DecodeError) -> Bool {
            if case .limit(let message, let width, let height) = error {
                return message.contains("more than 64 times its first frame") && (width, height) == (10000, 10000)
            }
            return false
        }
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(bomb) }
        do {
            _ = try ImageDecoders.decode(bomb)
        } catch {
            #expect(refused(error), "\(error)")
        }
        let incremental = try ImageDecoders.makeIncremental(for: .gif, options: DecodeOptions())
        do {
            _ = try incremental.feed(Array(bomb.prefix(40)), isLast: false)
            Issue.record("the canvas was accepted")
        } catch {
            #expect(refused(error), "\(error)")
        }
        // 2048 x 2048 around a 1 x 1 frame: at the floor, decoded (16 MB).
        let modest = GIFBuilder(screen: (2048, 2048), palette: [(1, 2, 3)]).frame(at: (0, 0), size: (1, 1), pixels: [0]).finished
        #expect(try ImageDecoders.decode(modest).width == 2048)
        // 2100 x 2100 around a 300 x 300 frame: 49 times it, decoded.
        let framed = GIFBuilder(screen: (2100, 2100), palette: [(1, 2, 3)])
            .frame(at: (10, 10), size: (300, 300), pixels: [UInt8](repeating: 0, count: 90_000)).finished
        #expect(try ImageDecoders.decode(framed).height == 2100)
    }

    @Test func aFirstFrameBeyondItsScreenEnlargesTheCanvas() throws {
        let gif = GIFBuilder(screen: (1, 1), palette: [(10, 20, 30), (40, 50, 60)])
            .frame(at: (1, 0), size: (2, 2), pixels: [0, 1, 1, 0])
            .finished
        let image = try ImageDecoders.decode(gif)
        #expect((image.width, image.height) == (3, 2))
        #expect(Array(image.pixels[4..<8]) == [10, 20, 30, 255])
        #expect(Array(image.pixels[0..<4]) == [0, 0, 0, 0])
        #expect(ImageDecoders.probeSize(gif)! == (3, 2))
    }
}

/// GIFs made byte by byte: LZW codes of the minimum size, with a clear code after every second
/// pixel so that the code size never grows.
struct GIFBuilder {
    var bytes: [UInt8]
    let colours: Int

    init(screen: (Int, Int), palette: [(UInt8, UInt8, UInt8)]) {
        colours = 4
        bytes = Array("GIF89a".utf8) + le16(screen.0) + le16(screen.1) + [0xF1, 0, 0]  // 4-colour global table
        for i in 0..<4 {
            let c = i < palette.count ? palette[i] : (0, 0, 0)
            bytes += [c.0, c.1, c.2]
        }
    }

    func frame(at origin: (Int, Int), size: (Int, Int), pixels: [UInt8], transparent: UInt8? = nil) -> GIFBuilder {
        var out = self
        if let transparent { out.bytes += [0x21, 0xF9, 4, 0x01, 0, 0, transparent, 0] }
        out.bytes += [0x2C] + le16(origin.0) + le16(origin.1) + le16(size.0) + le16(size.1) + [0]
        // Minimum code size 2: clear = 4, end = 5, codes of 3 bits.
        var codes: [Int] = [4]
        for (i, p) in pixels.enumerated() {
            codes.append(Int(p))
            if i % 2 == 1 { codes.append(4) }
        }
        codes.append(5)
        var packed: [UInt8] = []
        var accumulator = 0
        var bits = 0
        for code in codes {
            accumulator |= code << bits
            bits += 3
            while bits >= 8 {
                packed.append(UInt8(accumulator & 0xFF))
                accumulator >>= 8
                bits -= 8
            }
        }
        if bits > 0 { packed.append(UInt8(accumulator & 0xFF)) }
        out.bytes += [2]
        for start in stride(from: 0, to: packed.count, by: 255) {
            let block = packed[start..<min(packed.count, start + 255)]
            out.bytes += [UInt8(block.count)] + block
        }
        out.bytes += [0]
        return out
    }

    var finished: [UInt8] { bytes + [0x3B] }
}

private func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
