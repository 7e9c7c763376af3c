import Foundation
import ImageDecoding
import Testing
import TestSupport

/// JPEG XL against `djxl` (libjxl's own tool, Debian's libjxl-tools) on libjxl's conformance files
/// (`Tests/Corpora/jxl`): lossy (XYB) and lossless, alpha, gray, upsampling, layers and blend
/// modes, an animation's first frame, a JPEG recompressed, an oriented image and an 11-megapixel
/// progressive photo; whole, in pieces, probed, limited, truncated and corrupt.
@Suite struct JXLDecodingTests {
    static let samples = Corpora.localFiles("jxl", suffix: ".jxl")
    /// Every file against djxl (alpha_premultiplied: its premultiplied alpha comes out as djxl
    /// leaves it, so it is decoded and fed in pieces but not compared).
    static let compared = samples.filter { !$0.contains("alpha_premultiplied") }

    /// djxl's rendering (upright, as it writes files) as a PNM (P5 gray, P6 RGB or, with alpha, P7),
    /// 8-bit samples, or 16-bit ones brought to 8 bits; nil when djxl is not there.
    static func djxl(_ path: String) throws -> DecodedImage? {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("iw-djxl-\(UUID().uuidString).ppm")
        defer { try? FileManager.default.removeItem(at: out) }
        guard try Corpora.output(of: "djxl", [Corpora.local.appendingPathComponent(path).path, out.path]) != nil,
            let file = try? Data(contentsOf: out)
        else { return nil }
        return pnm(Array(file))
    }

    static func pnm(_ data: [UInt8]) -> DecodedImage? {
        // P5/P6: "Px\n<w> <h>\n<max>\n"; P7: "P7\nWIDTH w\nHEIGHT h\nDEPTH d\nMAXVAL m\nTUPLTYPE t\nENDHDR\n".
        var lines: [String] = []
        var index = 0
        while index < data.count {
            guard let newline = data[index...].firstIndex(of: 0x0A) else { return nil }
            let line = String(decoding: data[index..<newline], as: UTF8.self)
            lines.append(line)
            index = newline + 1
            if line == "ENDHDR" || (lines.first != "P7" && lines.count == 3) { break }
        }
        var width = 0, height = 0, depth = 0, maxval = 0
        if lines.first == "P7" {
            for line in lines {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let value = Int(parts[1]) else { continue }
                switch parts[0] {
                case "WIDTH": width = value
                case "HEIGHT": height = value
                case "DEPTH": depth = value
                case "MAXVAL": maxval = value
                default: break
                }
            }
        } else if lines.count == 3 {
            let size = lines[1].split(separator: " ").compactMap { Int($0) }
            guard size.count == 2, let m = Int(lines[2]) else { return nil }
            (width, height, depth, maxval) = (size[0], size[1], lines[0] == "P5" ? 1 : 3, m)
        }
        let bytes = maxval > 255 ? 2 : 1
        let count = width * height * depth
        guard count > 0, data.count - index == count * bytes, let layout: PixelLayout = [1: .gray, 3: .rgb, 4: .rgba][depth] else { return nil }
        let pixels = (0..<count).map { i -> UInt8 in
            guard bytes == 2 else { return data[index + i] }
            // (djxl 0.7 writes a 9- or 12-bit file's MAXVAL as 511 or 4095, its samples at full 16-bit scale.)
            let value = Int(data[index + 2 * i]) << 8 | Int(data[index + 2 * i + 1])
            return UInt8((value * 255 + 32767) / 65535)
        }
        return DecodedImage(width: width, height: height, layout: layout, pixels: pixels, format: .png)
    }

    static func largestDifference(_ a: DecodedImage, _ b: DecodedImage) -> Int {
        zip(a.pixels, b.pixels).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }

    @Test func theCorpusIsThere() {
        #expect(Self.samples.count == 12)
        #expect(ImageDecoders.decodedFormats.contains(.jxl))
    }

    /// Every file decodes as djxl renders it (the same library: within a level), once turned as
    /// its orientation says; fed in pieces, to the same pixels.
    @Test(arguments: compared)
    func samplesMatchDjxl(_ path: String) throws {
        let data = try Corpora.localBytes(path)
        #expect(ImageFormat.detect(data) == .jxl)
        var options = DecodeOptions()
        options.colorProfile = .keep
        let whole = try ImageDecoders.decode(data, options: options)
        let probed = try #require(ImageDecoders.probeSize(data))
        #expect(probed == (whole.width, whole.height))
        if let reference = try Self.djxl(path) {
            let upright = whole.applyingOrientation().converted(to: reference.layout)
            try #require(upright.width == reference.width && upright.height == reference.height, "\(path)")
            #expect(Self.largestDifference(upright, reference) <= 1, "\(path)")
        }
        for chunk in [4096, 65536] {
            let (decoder, _) = try Corpora.feed(data, format: .jxl, chunk: chunk, options: options)
            #expect(decoder.isComplete)
            #expect(decoder.currentImage() == whole, "\(path), chunk \(chunk)")
        }
    }

    /// The orientation comes from the basic info, before any pixel: the pixels stay as stored.
    @Test func orientationIsReportedNotApplied() throws {
        let data = try Corpora.localBytes("jxl/bench_oriented_brg.jxl")
        let image = try ImageDecoders.decode(data)
        #expect(image.orientation != 1)
        #expect(data.withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: .jxl) } == image.orientation)
        let header = try ImageHeader.read(data).get()
        #expect((header.width, header.height) == (image.width, image.height))
    }

    /// A progressive file fed as it would arrive: partial frames with more passes each, then the
    /// whole image, the same as decoded at once.
    @Test func progressivePassesArriveAsPartialFrames() throws {
        let data = try Corpora.localBytes("jxl/progressive.jxl")
        let (decoder, updates) = try Corpora.feed(data, format: .jxl, chunk: 32768)
        #expect(decoder.isComplete)
        #expect(updates >= 3, "\(updates) partial frames")
        #expect(decoder.completedPasses >= 2)
        #expect(decoder.currentImage() == (try ImageDecoders.decode(data)))
    }

    /// The pixel limit is checked from the basic info, before any buffer; a truncated file and
    /// one with damage fail with their own errors, and a file that is not one is not detected.
    @Test func limitsTruncationAndCorruption() throws {
        let data = try Corpora.localBytes("jxl/bicycles.jxl")
        var options = DecodeOptions()
        options.maxPixels = 1000
        #expect { _ = try ImageDecoders.decode(data, options: options) } throws: { Corpora.isLimit($0, saying: "1024x631") }
        #expect { _ = try ImageDecoders.decode(Array(data.prefix(data.count / 2))) } throws: { error in
            if case .truncated? = error as? DecodeError { return true }
            return false
        }
        // (Cut inside the header: the same.)
        #expect { _ = try ImageDecoders.decode(Array(data.prefix(20))) } throws: { error in
            if case .truncated? = error as? DecodeError { return true }
            return false
        }
        var damaged = data
        for i in stride(from: 40, to: damaged.count, by: 97) { damaged[i] ^= 0x5A }
        #expect(throws: DecodeError.self) { _ = try ImageDecoders.decode(damaged) }
        #expect(ImageDecoders.probeSize(Array(data.prefix(4))) == nil)
    }

    /// Gray output, and colours kept or converted: a lossy file is rendered in sRGB by libjxl
    /// either way.
    @Test func layoutsAndColours() throws {
        let data = try Corpora.localBytes("jxl/bicycles.jxl")
        for layout in PixelLayout.allCases {
            var options = DecodeOptions()
            options.layout = layout
            let image = try ImageDecoders.decode(data, options: options)
            #expect(image.layout == layout && image.pixels.count == image.width * image.height * layout.channels)
            options.colorProfile = .keep
            #expect(try ImageDecoders.decode(data, options: options).pixels == image.pixels)
        }
    }
}
