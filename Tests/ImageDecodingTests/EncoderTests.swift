import Foundation
import ImageDecoding
import Testing

/// JPEG (TurboJPEG) and WebP (libwebp) encoding of decoded pixels, read back by the decoders.
struct EncoderTests {
    /// A 97×61 picture with smooth areas, edges and, in RGBA, a transparent band.
    static func picture(_ layout: PixelLayout, transparent: Bool = false) -> DecodedImage {
        let (width, height) = (97, 61)
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let rgb: [UInt8] = [UInt8(x * 255 / width), UInt8(y * 255 / height), (x / 8 + y / 8) % 2 == 0 ? 40 : 200]
                switch layout {
                case .rgba: pixels += rgb + [transparent && y < 10 ? 0 : 255]
                case .rgb: pixels += rgb
                case .gray: pixels.append(rgb[0] / 2 + rgb[1] / 2)
                }
            }
        }
        return DecodedImage(width: width, height: height, layout: layout, pixels: pixels, format: .png)
    }

    /// Over the rows from `fromRow` on (the transparent band's colour is the encoder's to choose).
    static func meanDifference(_ a: DecodedImage, _ b: DecodedImage, fromRow: Int = 0) -> Double {
        let start = fromRow * a.stride
        var total = 0
        for i in start..<a.pixels.count { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
        return Double(total) / Double(a.pixels.count - start)
    }

    /// The same alpha everywhere and the same colour wherever alpha is not 0 (libwebp, as
    /// Pillow's default, does not keep the colour under fully transparent pixels).
    static func sameAsSeen(_ a: DecodedImage, _ b: DecodedImage) -> Bool {
        guard a.layout == .rgba, b.layout == .rgba, a.pixels.count == b.pixels.count else { return false }
        for i in stride(from: 0, to: a.pixels.count, by: 4) {
            let alpha: UInt8 = a.pixels[i + 3]
            if alpha != b.pixels[i + 3] { return false }
            if alpha != 0 && !a.pixels[i..<(i + 3)].elementsEqual(b.pixels[i..<(i + 3)]) { return false }
        }
        return true
    }

    @Test(arguments: [PixelLayout.rgba, .rgb, .gray])
    func jpegRoundTripsCloseAndQualityAndSubsamplingTell(_ layout: PixelLayout) throws {
        let image = Self.picture(layout)
        let q90 = try ImageEncoders.encode(image, as: .jpeg(quality: 90, subsampling: .s420))
        #expect(q90.starts(with: [0xFF, 0xD8, 0xFF]) && ImageFormat.detect(q90) == .jpeg)
        var options = DecodeOptions()
        options.layout = layout == .gray ? .gray : .rgb
        let back = try ImageDecoders.decode(q90, options: options)
        #expect((back.width, back.height) == (97, 61))
        let difference = Self.meanDifference(back, image.converted(to: options.layout))
        #expect(difference < 10)
        let q20 = try ImageEncoders.encode(image, as: .jpeg(quality: 20, subsampling: .s420))
        #expect(q20.count < q90.count)
        if layout != .gray {
            // The picture's blue checkerboard is sharp colour: full-size chroma keeps it closer.
            let full = try ImageDecoders.decode(try ImageEncoders.encode(image, as: .jpeg(quality: 90, subsampling: .s444)), options: options)
            #expect(Self.meanDifference(full, image.converted(to: .rgb)) < difference / 2, "4:4:4 keeps more colour")
        }
    }

    @Test func webpLosslessIsExactAndKeepsAlphaOnlyWhenUsed() throws {
        for (layout, transparent) in [(PixelLayout.rgba, true), (.rgba, false), (.rgb, false), (.gray, false)] {
            let image = Self.picture(layout, transparent: transparent)
            let bytes = try ImageEncoders.encode(image, as: .webp(quality: 80, lossless: true))
            #expect(ImageFormat.detect(bytes) == .webp)
            let back = try ImageDecoders.decode(bytes)
            #expect(Self.sameAsSeen(back, image.converted(to: .rgba)), "\(layout) transparent \(transparent)")
            // VP8X with its alpha flag, or VP8L whose alpha-is-used bit says so.
            let hasAlpha = bytes[12..<16].elementsEqual("VP8L".utf8) ? bytes[24] & 0x10 != 0 : bytes[20] & 0x10 != 0
            #expect(hasAlpha == transparent, "\(layout) transparent \(transparent)")
        }
    }

    @Test func webpLossyIsCloseAndQualityTells() throws {
        let image = Self.picture(.rgba, transparent: true)
        let q80 = try ImageEncoders.encode(image, as: .webp(quality: 80, lossless: false))
        let q10 = try ImageEncoders.encode(image, as: .webp(quality: 10, lossless: false))
        #expect(q10.count < q80.count)
        let back = try ImageDecoders.decode(q80)
        // (VP8 stores chroma at half size: the picture's sharp blue checkerboard costs most.)
        let difference = Self.meanDifference(back, image, fromRow: 10)
        #expect(difference < 16)
        #expect(Self.meanDifference(try ImageDecoders.decode(q10), image, fromRow: 10) > difference)
        #expect(back.pixels[3] == 0 && back.pixels[back.pixels.count - 1] == 255, "alpha kept")
    }

    @Test func sizesBeyondTheFormatsAreRefused() {
        let tall = DecodedImage(width: 1, height: 70_000, layout: .gray, pixels: [UInt8](repeating: 7, count: 70_000), format: .png)
        #expect(throws: DecodeError.self) { try ImageEncoders.encode(tall, as: .jpeg(quality: 90, subsampling: .s420)) }
        #expect(throws: DecodeError.self) { try ImageEncoders.encode(tall, as: .webp(quality: 80, lossless: false)) }
    }
}
