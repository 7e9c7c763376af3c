import CImageCodecs
import Foundation
import ImageDecoding
import Testing
import TestSupport

/// Colour management against Pillow's `ImageCms` (Little CMS, Debian's python3-pil) on real files
/// with profiles (`Tests/Corpora/color`): Display P3, ProPhoto, ColorMatch, Adobe RGB (1998), a
/// 400 KB "TIFF RGB" profile in seven APP2 chunks, a CMYK JPEG with its SWOP profile, AVIF and WebP.
@Suite struct ColorManagementTests {
    /// Files whose colours change in sRGB, and those already sRGB (tagged or not).
    static let converted = [
        "color/p3.png", "color/prophoto.png", "color/xmp_tags_orientation.png", "color/xmp_tags_orientation.avif",
        "color/xmp_test.jpg", "color/icc_profile_big.jpg", "color/p3-lossless.webp",
        "color/Channel_digital_image_CMYK_color.jpg",
    ]

    /// Pillow's sRGB rendering of a file (through its embedded profile, perceptual intent) as RGB,
    /// or nil when Pillow is not there.
    static func pillowSRGB(_ path: String) throws -> DecodedImage? {
        let script = """
            import io, sys
            from PIL import Image, ImageCms
            im = Image.open(sys.argv[1])
            im.load()
            source = ImageCms.ImageCmsProfile(io.BytesIO(im.info["icc_profile"]))
            if im.mode not in ("CMYK", "RGB"):
                im = im.convert("RGB")
            out = ImageCms.profileToProfile(im, source, ImageCms.createProfile("sRGB"), outputMode="RGB")
            sys.stdout.buffer.write(b"%d %d\\n" % out.size + out.tobytes())
            """
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
            let out = try Corpora.output(of: "/usr/bin/python3", ["-c", script, Corpora.local.appendingPathComponent(path).path]),
            let newline = out.firstIndex(of: 0x0A)
        else { return nil }
        let size = String(decoding: out[..<newline], as: UTF8.self).split(separator: " ").compactMap { Int($0) }
        guard size.count == 2, out.count - newline - 1 == size[0] * size[1] * 3 else { return nil }
        return DecodedImage(width: size[0], height: size[1], layout: .rgb, pixels: Array(out[(newline + 1)...]), format: .png)
    }

    /// Pillow's sRGB rendering of decoded RGB values through `profile` (for files Pillow cannot
    /// open: an AVIF before Pillow 11.2), or nil when Pillow is not there.
    static func pillowSRGB(of image: DecodedImage, profile: [UInt8]) throws -> DecodedImage? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("iw-color-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ppm = folder.appendingPathComponent("stored.ppm")
        let icc = folder.appendingPathComponent("profile.icc")
        try Data(Array("P6\n\(image.width) \(image.height)\n255\n".utf8) + image.pixels).write(to: ppm)
        try Data(profile).write(to: icc)
        let script = """
            import sys
            from PIL import Image, ImageCms
            out = ImageCms.profileToProfile(Image.open(sys.argv[1]), ImageCms.getOpenProfile(sys.argv[2]), ImageCms.createProfile("sRGB"), outputMode="RGB")
            sys.stdout.buffer.write(out.tobytes())
            """
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
            let out = try Corpora.output(of: "/usr/bin/python3", ["-c", script, ppm.path, icc.path]), out.count == image.pixels.count
        else { return nil }
        return DecodedImage(width: image.width, height: image.height, layout: .rgb, pixels: out, format: image.format)
    }

    /// Mean and largest absolute difference of two images' samples.
    static func difference(_ a: DecodedImage, _ b: DecodedImage) -> (mean: Double, max: Int) {
        var total = 0
        var largest = 0
        for (x, y) in zip(a.pixels, b.pixels) {
            let d = abs(Int(x) - Int(y))
            total += d
            largest = max(largest, d)
        }
        return (Double(total) / Double(max(1, a.pixels.count)), largest)
    }

    static func decode(_ path: String, _ handling: ColorHandling, layout: PixelLayout = .rgb) throws -> DecodedImage {
        var options = DecodeOptions()
        options.layout = layout
        options.colorProfile = handling
        return try ImageDecoders.decode(try Corpora.localBytes(path), options: options)
    }

    @Test(arguments: converted)
    func convertedAsPillowConvertsThem(_ path: String) throws {
        let ours = try Self.decode(path, .srgb)
        let stored = try Self.decode(path, .keep)
        #expect(ours.iccProfile == nil)
        #expect(stored.iccProfile != nil, "\(path): keep gives the profile")
        // The conversion changed something (these profiles are far from sRGB).
        #expect(Self.difference(ours, stored).mean > 0.5, "\(path)")
        // The conversion alone: Little CMS (Pillow's ImageCms) on the same stored values, within a
        // level or two (a CMYK file's stored values are not RGB: it is held to the whole file below).
        if !path.contains("CMYK"), let exact = try Self.pillowSRGB(of: stored, profile: stored.iccProfile ?? []) {
            let (mean, largest) = Self.difference(ours, exact)
            #expect(mean < 0.2 && largest <= 2, "\(path): against ImageCms on the same values, mean \(mean), largest \(largest)")
        }
        guard let reference = try Self.pillowSRGB(path) ?? Self.pillowSRGB(of: stored, profile: stored.iccProfile ?? []) else { return }
        try #require(ours.width == reference.width && ours.height == reference.height)
        let (mean, largest) = Self.difference(ours, reference)
        // Decoders differ by a level or two (chroma upsampling, AV1 to RGB); Little CMS is the same.
        #expect(mean < 1.5, "\(path): mean difference \(mean)")
        #expect(largest <= 24, "\(path): largest difference \(largest)")
    }

    /// An embedded sRGB profile (the usual "sRGB IEC61966-2.1") changes nothing.
    @Test(arguments: ["color/flower2.webp"])
    func anSRGBProfileChangesNothing(_ path: String) throws {
        let ours = try Self.decode(path, .srgb)
        let stored = try Self.decode(path, .keep)
        #expect(ours.pixels == stored.pixels)
        // (The profile is there, and is sRGB's: kept, it changes nothing either.)
        #expect(stored.iccProfile?.isEmpty == false)
    }

    /// The profile `keep` returns is the file's, byte for byte: the seven APP2 chunks of a 400 KB
    /// profile put together, a PNG's iCCP inflated (their sizes as Pillow's `info["icc_profile"]`).
    @Test func keepReturnsTheFilesProfile() throws {
        #expect(try Self.decode("color/icc_profile_big.jpg", .keep).iccProfile?.count == 399_788)
        #expect(try Self.decode("color/p3.png", .keep).iccProfile?.count == 548)
        #expect(try Self.decode("color/xmp_test.jpg", .keep).iccProfile?.count == 560)
    }

    /// RGBA keeps its alpha; RGB and RGBA give the same colours.
    @Test func alphaIsKept() throws {
        let rgba = try Self.decode("color/p3.png", .srgb, layout: .rgba)
        let stored = try Self.decode("color/p3.png", .keep, layout: .rgba)
        let rgb = try Self.decode("color/p3.png", .srgb)
        for i in 0..<(rgba.width * rgba.height) {
            #expect(rgba.pixels[i * 4 + 3] == stored.pixels[i * 4 + 3])
            #expect(Array(rgba.pixels[(i * 4)..<(i * 4 + 3)]) == Array(rgb.pixels[(i * 3)..<(i * 3 + 3)]))
        }
    }

    /// A CMYK JPEG without a profile keeps the naive conversion; with one, Little CMS's.
    @Test func cmykWithoutAProfileIsConvertedAsBefore() throws {
        let bytes = try Corpora.localBytes("color/Channel_digital_image_CMYK_color.jpg")
        #expect(ColorProfile.read(bytes, format: .jpeg).icc?.count == 557_168)
        let naive = try Self.decode("color/Channel_digital_image_CMYK_color.jpg", .keep)
        let managed = try Self.decode("color/Channel_digital_image_CMYK_color.jpg", .srgb)
        #expect(Self.difference(naive, managed).mean > 2)
    }

    /// Every path a decode takes gives the same colours: whole, scaled (JPEG DCT scaling, PNG rows,
    /// WebP scaled by libwebp), and incremental.
    @Test(arguments: ["color/xmp_test.jpg", "color/xmp_tags_orientation.png", "color/p3-lossless.webp"])
    func scaledDecodesAreConvertedToo(_ path: String) throws {
        let bytes = try Corpora.localBytes(path)
        var options = DecodeOptions()
        options.layout = .rgb
        let whole = try ImageDecoders.decode(bytes, options: options)
        let half = (max(1, whole.width / 2), max(1, whole.height / 2))
        let scaled = try ImageDecoders.decode(bytes, options: options) { _, _ in half }
        options.colorProfile = .keep
        let storedScaled = try ImageDecoders.decode(bytes, options: options) { _, _ in half }
        #expect(Self.difference(scaled, storedScaled).mean > 0.5)
        let resizedWhole = ImageResampler.resize(whole, width: half.0, height: half.1)
        #expect(Self.difference(scaled, resizedWhole).mean < 2.0, "\(path)")
    }

    /// PngSuite's ccwn2c08 has sRGB's chromaticities (cHRM) and a linear gAMA, which libpng
    /// already turns into sRGB's curve: nothing more to do.
    @Test func sRGBChromaticitiesChangeNothing() throws {
        guard Corpora.present else { return }
        let bytes = Array(try Data(contentsOf: Corpora.root.appendingPathComponent("pngsuite/ccwn2c08.png")))
        #expect(!ColorProfile.read(bytes, format: .png).isEmpty)
        var options = DecodeOptions()
        let converted = try ImageDecoders.decode(bytes, options: options)
        options.colorProfile = .keep
        #expect(try ImageDecoders.decode(bytes, options: options) == converted)
    }

    /// p3.png with its Display P3 profile (iCCP) replaced by Display P3's chromaticities (cHRM, no
    /// gAMA: the sRGB curve, as Display P3 has): the same colours as through the profile.
    @Test func pngChromaticitiesAreConvertedAsTheirProfileWould() throws {
        let original = try Corpora.localBytes("color/p3.png")
        var rebuilt = Array(original[0..<8])
        var at = 8
        while at + 12 <= original.count {
            let length = Int(original[at]) << 24 | Int(original[at + 1]) << 16 | Int(original[at + 2]) << 8 | Int(original[at + 3])
            let type = String(decoding: original[(at + 4)..<(at + 8)], as: UTF8.self)
            if type == "iCCP" {
                let p3 = [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060]
                rebuilt += PNGChunk.make("cHRM", p3.flatMap { value -> [UInt8] in
                    let v = UInt32((value * 100_000).rounded())
                    return [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
                })
            } else {
                rebuilt += original[at..<(at + 12 + length)]
            }
            at += 12 + length
        }
        #expect(ColorProfile.read(rebuilt, format: .png).icc == nil)
        var options = DecodeOptions()
        options.layout = .rgb
        let fromChromaticities = try ImageDecoders.decode(rebuilt, options: options)
        let fromProfile = try ImageDecoders.decode(original, options: options)
        options.colorProfile = .keep
        let stored = try ImageDecoders.decode(rebuilt, options: options)
        #expect(Self.difference(fromChromaticities, stored).mean > 0.5)
        let (mean, largest) = Self.difference(fromChromaticities, fromProfile)
        #expect(mean < 0.5 && largest <= 2, "mean \(mean), largest \(largest)")
    }

    /// A profile that is not one (truncated, random bytes) is ignored: the pixels as stored.
    @Test func aBrokenProfileIsIgnored() throws {
        var profile = ColorProfile(icc: Array(repeating: 0x41, count: 600))
        var image = try Self.decode("color/p3.png", .keep)
        let before = image.pixels
        image.manageColor(profile, .srgb)
        #expect(image.pixels == before)
        profile.icc = Array(try Self.decode("color/p3.png", .keep).iccProfile!.prefix(200))
        image.manageColor(profile, .srgb)
        #expect(image.pixels == before)
    }
}

/// The vector and portable paths of the matrix/curve conversion agree, for every layout and
/// in place, on 2^18 colours (a level apart at most: one sums floats, the other folded integers).
@Suite struct ColorPathTests {
    @Test(arguments: [PixelLayout.rgba, .rgb])
    func vectorAndPortablePathsAgree(_ layout: PixelLayout) throws {
        let profile = try #require(try ImageDecoders.decode(try Corpora.localBytes("color/xmp_test.jpg"), options: {
            var o = DecodeOptions()
            o.colorProfile = .keep
            return o
        }()).iccProfile)
        var random = SplitMix(seed: 7)
        let count = 1 << 18 + 5  // (not a multiple of 8: the tail too)
        let pixels = (0..<(count * layout.channels)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let transform = try #require(profile.withUnsafeBufferPointer {
            iw_color_from_icc($0.baseAddress, $0.count, IW_COLOR_FROM_PIXELS, layout == .rgba ? IW_RGBA : IW_RGB)
        })
        defer { iw_color_release(transform) }
        // In place, as the decoders convert.
        var vector = pixels
        var portable = pixels
        vector.withUnsafeMutableBufferPointer { iw_color_convert_portable(transform, $0.baseAddress, $0.baseAddress, count, 0) }
        portable.withUnsafeMutableBufferPointer { iw_color_convert_portable(transform, $0.baseAddress, $0.baseAddress, count, 1) }
        #expect(vector != pixels)
        var largest = 0
        for (a, b) in zip(vector, portable) { largest = max(largest, abs(Int(a) - Int(b))) }
        #expect(largest <= 1)
        if layout == .rgba {
            for i in stride(from: 3, to: pixels.count, by: 4) where vector[i] != pixels[i] || portable[i] != pixels[i] {
                Issue.record("alpha changed at \(i)")
                break
            }
        }
    }
}
