import Foundation
import ImageDecoding
import Testing
import TestSupport

/// WebP against libwebp's own `dwebp` on libwebp's test data and image-rs's animations.
@Suite(.enabled(if: Corpora.installed("dwebp"), "dwebp (Debian's webp) is not installed"))
struct WebPDecodingTests {
    static let stills = Corpora.localFiles("webp", suffix: ".webp")
        + Corpora.localFiles("webp-animated", suffix: ".webp").filter { !$0.contains("animated_") }
    static let animations = Corpora.localFiles("webp-animated", suffix: ".webp").filter { $0.contains("animated_") }

    static func dwebp(_ path: String, _ arguments: [String] = []) throws -> DecodedImage? {
        let file = Corpora.local.appendingPathComponent(path).path
        guard let data = try Corpora.output(of: "dwebp", ["-quiet", "-pam"] + arguments + [file, "-o", "-"]), !data.isEmpty else { return nil }
        return Corpora.pam(data)
    }

    @Test func theCorpusIsThere() {
        #expect(Self.stills.count == 136)
        #expect(Self.animations.count == 2)
    }

    /// Every still file: dwebp's RGBA, whole and fed in pieces (each byte once, through
    /// `WebPIDecoder`); RGB and grey from the same pixels.
    @Test(arguments: stills)
    func stillImagesMatchDwebp(_ path: String) throws {
        let data = try Corpora.localBytes(path)
        let reference = try #require(try Self.dwebp(path))
        let whole = try ImageDecoders.decode(data)
        #expect(Corpora.difference(whole, reference) == nil, "\(path)")
        #expect(whole.format == .webp && whole.animation == nil)
        for chunk in data.count < 20_000 ? [1, 7, 4096] : [7, 4096, 65536] {
            let (decoder, _) = try Corpora.feed(data, format: .webp, chunk: chunk)
            #expect(decoder.isComplete)
            #expect(decoder.filledRows == reference.height)
            let image = try #require(decoder.currentImage())
            #expect(Corpora.difference(image, reference) == nil, "\(path), chunk \(chunk)")
        }
        var options = DecodeOptions()
        options.layout = .gray
        #expect(try ImageDecoders.decode(data, options: options) == whole.converted(to: .rgb).converted(to: .gray))
    }

    /// Scaled while decoding (libwebp's rescaler, as `dwebp -resize`), whole and incrementally.
    @Test(arguments: stills.filter { !$0.contains("small_") })
    func scaledDecodingMatchesDwebpResize(_ path: String) throws {
        let data = try Corpora.localBytes(path)
        let (width, height) = try #require(ImageDecoders.probeSize(data))
        let target = ImageResampler.fittedSize(width: width, height: height, maxPixelSize: 37, maxPixelCount: nil)
        guard target != (width, height) else { return }
        let reference = try #require(try Self.dwebp(path, ["-resize", "\(target.width)", "\(target.height)"]))
        let whole = try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: 37, maxPixelCount: nil)
        #expect(Corpora.difference(whole, reference) == nil, "\(path)")
        let decoder = try ImageDecoders.makeIncremental(for: .webp, options: DecodeOptions(), source: (width, height), target: target)
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + 999)
            _ = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
            offset = end
        }
        #expect(try #require(decoder.currentImage()) == whole, "\(path)")
    }

    /// Rows arrive from the top while a large lossy file is fed, and a file cut short keeps the
    /// rows it had and ends with `truncated`.
    @Test func partialRowsArriveAndATruncatedFileSaysSo() throws {
        let data = try Corpora.localBytes("webp/lossy_extreme_probabilities.webp")
        let decoder = try ImageDecoders.makeIncremental(for: .webp)
        var rows: [Int] = []
        var offset = 0
        while offset < data.count / 2 {
            let progress = try decoder.feed(Array(data[offset..<(offset + 16_384)]), isLast: false)
            if progress.contains(.pixels) { rows.append(decoder.filledRows) }
            offset += 16_384
        }
        #expect(rows.count >= 3, "partial rows: \(rows)")
        #expect(rows == rows.sorted() && rows.last! < decoder.size!.height)
        #expect(decoder.withCurrentPixels { $0.bytes.count } == decoder.size!.width * decoder.size!.height * 4)
        #expect {
            _ = try decoder.feed([], isLast: true)
        } throws: { error in
            guard case .truncated? = error as? DecodeError else { return false }
            return true
        }
        #expect(decoder.currentImage() != nil, "the partial image stays readable")
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(Array(data.prefix(data.count / 2))) }
    }

    /// An animation is its first frame on the canvas (image-rs's reference PNGs), with its frames
    /// counted; fed in pieces it gives the same once complete.
    @Test(arguments: zip(animations, [3, 4]))
    func animationsDecodeTheirFirstFrame(_ path: String, frames: Int) throws {
        let data = try Corpora.localBytes(path)
        let name = path.replacingOccurrences(of: "webp-animated/", with: "").replacingOccurrences(of: ".webp", with: "")
        let reference = try ImageDecoders.decode(try Corpora.localBytes("webp-animated/reference_\(name)-1.png"))
        let image = try ImageDecoders.decode(data)
        var asWebP = reference
        (asWebP.format, asWebP.animation) = (.webp, image.animation)
        #expect(Corpora.difference(image, asWebP) == nil)
        #expect(image.animation?.frameCount == frames)
        #expect(image.animation?.loopCount == 0)
        let (decoder, _) = try Corpora.feed(data, format: .webp, chunk: 1000)
        #expect(decoder.currentImage() == image)
        let small = try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: 20, maxPixelCount: nil)
        #expect(max(small.width, small.height) == 20 && small.animation == image.animation)
    }

    /// Limits from the header, before any pixel buffer: pixels (the canvas for animations) and
    /// frames.
    @Test func limitsAreCheckedFromTheHeader() throws {
        var options = DecodeOptions()
        options.maxPixels = 100
        for path in ["webp/test.webp", Self.animations[0]] {
            #expect {
                _ = try ImageDecoders.decode(try Corpora.localBytes(path), options: options)
            } throws: { Corpora.isLimit($0, saying: "exceeds the limit of 100 pixels") }
            #expect(throws: DecodeError.self) { try Corpora.feed(try Corpora.localBytes(path), format: .webp, chunk: 64, options: options) }
        }
        Corpora.expectFrameLimit(Self.animations[1], maxFrames: 3, saying: "4 frames exceeds the limit of 3 frames")
        options = DecodeOptions()
        options.maxFrames = 3
        #expect(throws: Never.self) { try ImageDecoders.decode(try Corpora.localBytes(Self.animations[0]), options: options) }
    }

    /// Damaged files end with an error, never a crash: every file cut at a third, and with bytes
    /// overwritten after its header.
    @Test func damagedFilesFail() throws {
        for path in Self.stills + Self.animations {
            let data = try Corpora.localBytes(path)
            #expect(throws: DecodeError.self, "\(path)") { try ImageDecoders.decode(Array(data.prefix(max(12, data.count / 3)))) }
            var damaged = data
            var seed: UInt64 = 0x5EED
            for _ in 0..<8 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let at = 30 + Int(seed >> 33) % max(1, data.count - 30)
                if at < damaged.count { damaged[at] ^= 0x5A }
            }
            _ = try? ImageDecoders.decode(damaged)
            _ = try? Corpora.feed(damaged, format: .webp, chunk: 333)
        }
    }
}
