import Foundation
import ImageDecoding
import Testing
import TestSupport

/// AVIF against libavif's own `avifdec` (Debian's libavif-bin) on libavif's test files.
@Suite(.enabled(if: Corpora.installed("avifdec"), "avifdec (Debian's libavif-bin) is not installed"))
struct AVIFDecodingTests {
    static let files = Corpora.localFiles("avif", suffix: ".avif")

    /// avifdec's 8-bit PNG of a file, decoded, or nil when avifdec refuses the file.
    static func avifdec(_ path: String) throws -> DecodedImage? {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("avifdec-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: out) }
        guard try Corpora.output(of: "avifdec", ["-d", "8", Corpora.local.appendingPathComponent(path).path, out.path]) != nil,
            let png = try? Data(contentsOf: out)
        else { return nil }
        return try ImageDecoders.decode(Array(png))
    }

    @Test func theCorpusIsThere() {
        #expect(Self.files.count == 17)
    }

    /// avifdec's pixels (8-bit, 10-bit scaled to 8), whole and through the buffering incremental
    /// decoder; the header's size is known before the last byte.
    @Test(arguments: files)
    func filesMatchAvifdec(_ path: String) throws {
        let data = try Corpora.localBytes(path)
        guard let reference = try Self.avifdec(path) else {
            // avifdec's strict checks refuse it (a missing ispe): decoded here, not compared.
            #expect(path.hasSuffix("alpha_noispe.avif") || path.contains("poc_b_"), "\(path): avifdec refused it")
            _ = try? ImageDecoders.decode(data)
            return
        }
        let whole = try ImageDecoders.decode(data)
        #expect(whole.format == .avif)
        #expect((whole.width, whole.height) == (reference.width, reference.height), "\(path)")
        #expect(whole.pixels == reference.pixels, "\(path): \(Corpora.difference(whole, DecodedImage(width: reference.width, height: reference.height, layout: .rgba, pixels: reference.pixels, orientation: whole.orientation, format: .avif, animation: whole.animation)) ?? "")")
        let decoder = try ImageDecoders.makeIncremental(for: .avif)
        var sawHeader = false
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + 500)
            let progress = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
            if progress.contains(.header) { sawHeader = end < data.count }
            #expect(progress.contains(.pixels) == (end == data.count), "no partial images")
            offset = end
        }
        if data.count > 500, ImageDecoders.probeSize(Array(data.prefix(500))) != nil {
            #expect(sawHeader, "\(path): the size before the end")
        }
        #expect(decoder.currentImage() == whole)
    }

    @Test func sequencesAreTheirFirstFrameWithTheirFramesCounted() throws {
        let image = try ImageDecoders.decode(try Corpora.localBytes("avif/colors-animated-8bpc.avif"))
        #expect((image.animation?.frameCount ?? 0) > 1)
        #expect(image.animation?.loopCount == nil)
        Corpora.expectFrameLimit("avif/colors-animated-8bpc.avif", maxFrames: 1, saying: "exceeds the limit of 1 frames")
    }

    /// irot and imir become the EXIF orientation, which `applyingOrientation` turns upright.
    @Test func rotationAndMirroringAreReportedAsAnOrientation() throws {
        let rotated = try ImageDecoders.decode(try Corpora.localBytes("avif/abc_color_irot_alpha_irot.avif"))
        #expect(rotated.orientation != 1)
        let upright = rotated.applyingOrientation()
        #expect(rotated.orientation >= 5 ? (upright.width, upright.height) == (rotated.height, rotated.width) : true)
        let plain = try ImageDecoders.decode(try Corpora.localBytes("avif/white_1x1.avif"))
        #expect(plain.orientation == 1)
        #expect(plain.pixels.allSatisfy { $0 >= 250 }, "white, give or take the lossy coding: \(plain.pixels)")
    }

    @Test func limitsAndDamage() throws {
        var options = DecodeOptions()
        options.maxPixels = 1000
        #expect {
            _ = try ImageDecoders.decode(try Corpora.localBytes("avif/kodim23_yuv420_8bpc.avif"), options: options)
        } throws: { Corpora.isLimit($0) }
        for path in Self.files {
            let data = try Corpora.localBytes(path)
            #expect(throws: DecodeError.self, "\(path)") { try ImageDecoders.decode(Array(data.prefix(data.count / 2))) }
        }
    }
}
