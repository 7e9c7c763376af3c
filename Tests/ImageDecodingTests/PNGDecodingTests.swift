import CLibDeflate
import Foundation
import ImageDecoding
import Testing
import TestSupport

@Suite(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
struct PNGDecodingTests {
    static let valid = Corpora.files("pngsuite", suffix: ".png").filter { !$0.hasPrefix("pngsuite/x") }
    static let corrupt = Corpora.files("pngsuite", suffix: ".png").filter { $0.hasPrefix("pngsuite/x") }
    static let edge = Corpora.files("png-edge/pngsuite-extra", suffix: ".png") + Corpora.files("png-edge/bugfixes", suffix: ".png")
        + Corpora.files("png-edge/iccp", suffix: ".png") + Corpora.files("png-edge/sbit", suffix: ".png")
        + Corpora.files("png-edge/text_chunk_examples", suffix: ".png") + Corpora.files("png-edge/animated", suffix: ".png")

    /// `bytes` decoded into `layout`.
    static func decode(_ bytes: [UInt8], as layout: PixelLayout) throws -> DecodedImage {
        var options = DecodeOptions()
        options.layout = layout
        return try ImageDecoders.decode(bytes, options: options)
    }

    @Test func theCorpusIsThere() {
        #expect(Self.valid.count == 161)
        #expect(Self.corrupt.count == 14)
    }

    /// Every valid PngSuite image decodes to the same RGBA as libpng's simplified API, whole and
    /// fed 1, 7, 4096 and 65536 bytes at a time. A 16-bit interlaced file's reference is its
    /// non-interlaced twin's (PngSuite's `basi*16` and `basn*16` hold the same image), as
    /// libpng 1.6.39's simplified API misplaces the rows of the interlaced one.
    @Test(arguments: valid)
    func validImagesMatchTheSimplifiedAPI(_ path: String) throws {
        let data = try Corpora.bytes(path)
        let reference = try Corpora.decodePNGWithSimplifiedAPI(try Corpora.bytes(Self.reference(for: path)))
        let whole = try ImageDecoders.decode(data)
        #expect(whole == reference)
        for chunk in [1, 7, 4096, 65536] {
            let (decoder, _) = try Corpora.feed(data, format: .png, chunk: chunk)
            #expect(decoder.isComplete)
            #expect(decoder.currentImage() == reference, "chunk \(chunk)")
        }
    }

    /// Scaled while rows arrive (the progressive path with `maxPixelSize`): the pixels of the
    /// whole-buffer scaled decode, in every layout, fed in odd chunk sizes; interlaced files keep
    /// their full-size frame (their rows come pass by pass).
    @Test(arguments: valid)
    func scaledIncrementalDecodingMatchesTheWholeScaledDecode(_ path: String) throws {
        let data = try Corpora.bytes(path)
        let full = try ImageDecoders.decode(data)
        for layout in [PixelLayout.rgba, .gray] {
            var options = DecodeOptions()
            options.layout = layout
            let target = ImageResampler.fittedSize(width: full.width, height: full.height, maxPixelSize: 11, maxPixelCount: nil)
            let whole = try ImageDecoders.decode(data, options: options, maxPixelSize: 11, maxPixelCount: nil)
            let decoder = try ImageDecoders.makeIncremental(
                for: .png, options: options, source: (full.width, full.height), target: target)
            var offset = 0
            var chunk = 1
            while offset < data.count {
                let end = min(data.count, offset + chunk)
                _ = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
                offset = end
                chunk = chunk * 3 % 97 + 1
            }
            let image = try #require(decoder.currentImage())
            if data[28] == 0 {
                #expect(image == whole, "\(path) \(layout)")
                #expect(decoder.filledRows == target.height)
            } else {
                #expect((image.width, image.height) == (full.width, full.height), "\(path): interlaced, full size")
            }
        }
    }

    /// The file whose simplified-API decode is `path`'s reference: itself, or for a 16-bit
    /// interlaced file its non-interlaced twin.
    static func reference(for path: String) -> String {
        sixteenBitInterlaced.contains(path) ? "pngsuite/basn" + path.dropFirst("pngsuite/basi".count) : path
    }

    /// PngSuite's 16-bit interlaced files (`basi*16`, and `bgai4a16`, `basi4a16` with a bKGD).
    static let sixteenBitInterlaced = valid.filter { ($0.hasPrefix("pngsuite/basi") || $0.hasPrefix("pngsuite/bgai")) && $0.hasSuffix("16.png") }

    /// libpng 1.6.39's simplified API misplaces a 16-bit interlaced file's rows: the reason those
    /// are decoded pass by pass here (if a later libpng mends it, this says so).
    @Test func theSimplifiedAPIMisplacesSixteenBitInterlacedRows() throws {
        #expect(Self.sixteenBitInterlaced.count == 5)
        for path in Self.sixteenBitInterlaced {
            let own = try Corpora.decodePNGWithSimplifiedAPI(try Corpora.bytes(path))
            let twin = try Corpora.decodePNGWithSimplifiedAPI(try Corpora.bytes(Self.reference(for: path)))
            #expect(own != twin, "\(path)")
        }
    }

    /// 16-bit interlaced files get a partial image per Adam7 pass, each pixel filling the block
    /// later passes refine; after six of the seven passes the even rows are final.
    @Test(arguments: sixteenBitInterlaced)
    func sixteenBitInterlacedFilesGiveAPartialImagePerPass(_ path: String) throws {
        let data = try Corpora.bytes(path)
        let final = try Corpora.decodePNGWithSimplifiedAPI(try Corpora.bytes(Self.reference(for: path)))
        let decoder = try ImageDecoders.makeIncremental(for: .png)
        var passes: [Int] = []
        var last: DecodedImage?
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + 16)
            let progress = try decoder.feed(Array(data[offset..<end]), isLast: end == data.count)
            if progress.contains(.pixels), !decoder.isComplete {
                passes.append(decoder.completedPasses)
                last = decoder.currentImage()
            }
            offset = end
        }
        #expect(passes == Array(1...6), "\(path): \(passes)")
        #expect(decoder.currentImage() == final)
        // Pass 7 holds the odd rows: each is its own (arrived) or a copy of the row above.
        let partial = try #require(last)
        func row(_ image: DecodedImage, _ y: Int) -> ArraySlice<UInt8> { image.pixels[(y * image.stride)..<((y + 1) * image.stride)] }
        for y in 0..<final.height {
            #expect(row(partial, y) == row(final, y) || (y % 2 == 1 && row(partial, y) == row(final, y - 1)), "\(path) row \(y)")
        }
        #expect((0..<final.height).contains { y in y % 2 == 1 && row(partial, y) != row(final, y) }, "a row still to come")
    }

    @Test(arguments: corrupt)
    func corruptImagesEndWithAnError(_ path: String) throws {
        let data = try Corpora.bytes(path)
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(data) }
        for chunk in [1, 4096] {
            #expect(throws: DecodeError.self, "chunk \(chunk)") { try Corpora.feed(data, format: .png, chunk: chunk) }
        }
    }

    /// image-rs's PNG regression files: the same verdict and pixels as the simplified API (and
    /// the orientation of an `eXIf` chunk, which the simplified API does not read).
    @Test(arguments: edge)
    func edgeCasesAgreeWithTheSimplifiedAPI(_ path: String) throws {
        let data = try Corpora.bytes(path)
        let reference = try? Corpora.decodePNGWithSimplifiedAPI(data)
        let ours = try? ImageDecoders.decode(data)
        #expect(ours.map { var stored = $0; stored.orientation = 1; return stored } == reference)
        #expect(ours == nil || ours?.orientation == data.withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: .png) })
        // Incrementally, only an eXIf chunk before the image data is read (as the whole file's
        // first, in these files).
        let incremental = try? Corpora.feed(data, format: .png, chunk: 7).decoder.currentImage()
        if reference != nil {
            #expect(incremental.map { var stored = $0; stored.orientation = 1; return stored } == reference)
            #expect(incremental?.orientation == ours?.orientation)
        }
    }

    @Test func interlacedImagesGiveAPartialImagePerPass() throws {
        let data = try Corpora.bytes("pngsuite/basi6a08.png")
        let decoder = try PNGDecoder()
        var passes: [Int] = []
        for byte in data {
            let progress = try decoder.feed([byte], isLast: false)
            if progress.contains(.pixels) { passes.append(decoder.completedPasses) }
        }
        _ = try? decoder.feed([], isLast: true)
        #expect(passes == Array(passes.sorted()), "partial images arrive in order")
        #expect(passes.last == 7)
        #expect(passes.count >= 6)
    }

    @Test func truncatedDataIsAnErrorThatSaysSoAndKeepsTheLastPartialImage() throws {
        let data = try Corpora.bytes("pngsuite/basi6a08.png")
        let decoder = try PNGDecoder()
        _ = try decoder.feed(Array(data.prefix(data.count * 3 / 4)), isLast: false)
        let partial = try #require(decoder.currentImage())
        #expect(throws: DecodeError.self) { try decoder.feed([], isLast: true) }
        do {
            _ = try decoder.feed([], isLast: true)
        } catch {
            guard case .truncated = error else { Issue.record("expected truncated, got \(error)"); return }
        }
        #expect(decoder.currentImage() == partial)
    }

    /// A PNG built here: `samples` (8- or 16-bit) as rows of one colour type, an optional gAMA
    /// chunk, the image data in stored (uncompressed) deflate blocks.
    static func png(width: Int, height: Int, depth: Int, color: UInt8, interlaced: Bool = false, gamma: UInt32?, samples: [Int]) -> [UInt8] {
        let channels = samples.count / (width * height)
        var raw: [UInt8] = []
        let passes: [(x: Int, y: Int, dx: Int, dy: Int)] =
            interlaced
            ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)] : [(0, 0, 1, 1)]
        for pass in passes {
            let columns = Array(stride(from: pass.x, to: width, by: pass.dx))
            guard !columns.isEmpty else { continue }
            for y in stride(from: pass.y, to: height, by: pass.dy) {
                raw.append(0)
                for x in columns {
                    for c in 0..<channels {
                        let v = samples[(y * width + x) * channels + c]
                        if depth == 16 { raw += [UInt8(v >> 8), UInt8(v & 0xFF)] } else { raw.append(UInt8(v)) }
                    }
                }
            }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, raw.count - offset)
            zlib += [offset + n == raw.count ? 1 : 0, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            zlib += raw[offset..<offset + n]
            offset += n
        } while offset < raw.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in raw {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        zlib += withUnsafeBytes(of: (b << 16 | a).bigEndian, Array.init)
        let ihdr = withUnsafeBytes(of: UInt32(width).bigEndian, Array.init) + withUnsafeBytes(of: UInt32(height).bigEndian, Array.init)
            + [UInt8(depth), color, 0, 0, interlaced ? 1 : 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + PNGChunk.make("IHDR", ihdr)
            + (gamma.map { PNGChunk.make("gAMA", withUnsafeBytes(of: $0.bigEndian, Array.init)) } ?? []) + PNGChunk.make("IDAT", zlib)
            + PNGChunk.make("IEND", [])
    }

    /// A 16-bit file decodes to the pixels of its 8-bit twin (each sample `s` as `s × 257`),
    /// gray or colour, with or without alpha, interlaced or not, in both readers: with no gAMA
    /// chunk both are sRGB (libpng would take the 16-bit one as linear light and brighten it:
    /// a mid-gray 128 came out as 188), and with one both are converted alike.
    @Test(arguments: [UInt8(0), 2, 4, 6])
    func aSixteenBitFileDecodesAsItsEightBitTwin(color: UInt8) throws {
        let channels = [0: 1, 2: 3, 4: 2, 6: 4][Int(color)]!
        let (width, height) = (37, 11)
        let samples = (0..<width * height * channels).map { ($0 * 37 + $0 / channels * 11) % 256 }
        for gamma in [nil, UInt32(100_000), 45_455] as [UInt32?] {
            for interlaced in [false, true] {
                let eight = Self.png(width: width, height: height, depth: 8, color: color, interlaced: interlaced, gamma: gamma, samples: samples)
                let sixteen = Self.png(
                    width: width, height: height, depth: 16, color: color, interlaced: interlaced, gamma: gamma, samples: samples.map { $0 * 257 })
                let reference = try Corpora.decodePNGWithSimplifiedAPI(eight)
                let label = "colour type \(color), gAMA \(gamma.map(String.init) ?? "none"), interlaced \(interlaced)"
                if gamma == nil {
                    // sRGB in, sRGB out: the samples themselves.
                    let gray = channels < 3
                    let alpha = channels % 2 == 0
                    var expected: [UInt8] = []
                    for pixel in stride(from: 0, to: samples.count, by: channels) {
                        let rgb = gray ? Array(repeating: samples[pixel], count: 3) : Array(samples[pixel..<pixel + 3])
                        expected += (rgb + [alpha ? samples[pixel + channels - 1] : 255]).map { UInt8($0) }
                    }
                    #expect(reference.pixels == expected, "\(label)")
                }
                // Converted from another gamma, libpng's tables for 16-bit input are not those
                // for 8-bit input: a sample may differ by one step.
                let tolerance = gamma == nil || gamma == 45_455 ? 0 : 1
                func matches(_ image: DecodedImage) -> Bool {
                    image.width == width && image.height == height && image.layout == .rgba
                        && zip(image.pixels, reference.pixels).allSatisfy { abs(Int($0) - Int($1)) <= tolerance }
                }
                if !interlaced {
                    // (libpng's simplified API misplaces a 16-bit interlaced file's rows: see above.)
                    #expect(matches(try Corpora.decodePNGWithSimplifiedAPI(sixteen)), "\(label), simplified API")
                }
                #expect(matches(try ImageDecoders.decode(sixteen)), "\(label), whole")
                for chunk in [1, 5000] {
                    let (decoder, _) = try Corpora.feed(sixteen, format: .png, chunk: chunk)
                    #expect(decoder.currentImage().map(matches) == true, "\(label), fed \(chunk) bytes at a time")
                }
            }
        }
    }

    /// A real 16-bit file, libjpeg-turbo's `monkey16.png` (RGB, an iCCP chunk, no gAMA or sRGB),
    /// decodes to its own samples scaled to 8 bits, within one step, in both readers (taken as
    /// linear light, some samples came out 72 steps lighter). The samples are read here: its
    /// image data inflated with libdeflate and its rows unfiltered.
    @Test func aRealSixteenBitFileKeepsItsSamples() throws {
        let data = try Corpora.bytes("jpeg/monkey16.png")
        func u32(_ at: Int) -> Int { Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3]) }
        var (width, height, idat) = (0, 0, [UInt8]())
        var offset = 8
        while offset + 12 <= data.count {
            let length = u32(offset)
            let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
            if type == "IHDR" {
                (width, height) = (u32(offset + 8), u32(offset + 12))
                #expect(Array(data[offset + 16..<offset + 21]) == [16, 2, 0, 0, 0], "16-bit RGB, not interlaced")
            }
            if type == "IDAT" { idat += data[offset + 8..<offset + 8 + length] }
            #expect(type != "gAMA" && type != "sRGB")
            offset += 12 + length
        }
        let (pixelBytes, rowBytes) = (6, width * 6)
        var raw = [UInt8](repeating: 0, count: height * (rowBytes + 1))
        let decompressor = try #require(libdeflate_alloc_decompressor())
        defer { libdeflate_free_decompressor(decompressor) }
        var actual = 0
        let status = raw.withUnsafeMutableBytes { out in
            idat.withUnsafeBytes { libdeflate_zlib_decompress(decompressor, $0.baseAddress, $0.count, out.baseAddress, out.count, &actual) }
        }
        try #require(status == LIBDEFLATE_SUCCESS && actual == raw.count)
        var samples = [UInt8](repeating: 0, count: height * rowBytes)
        for y in 0..<height {
            let filter = raw[y * (rowBytes + 1)]
            for x in 0..<rowBytes {
                let value = Int(raw[y * (rowBytes + 1) + 1 + x])
                let a = x >= pixelBytes ? Int(samples[y * rowBytes + x - pixelBytes]) : 0
                let b = y > 0 ? Int(samples[(y - 1) * rowBytes + x]) : 0
                let c = x >= pixelBytes && y > 0 ? Int(samples[(y - 1) * rowBytes + x - pixelBytes]) : 0
                let predicted: Int
                switch filter {
                case 0: predicted = 0
                case 1: predicted = a
                case 2: predicted = b
                case 3: predicted = (a + b) / 2
                default:
                    let (pa, pb, pc) = (abs(b - c), abs(a - c), abs(a + b - 2 * c))
                    predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
                }
                samples[y * rowBytes + x] = UInt8((value + predicted) & 0xFF)
            }
        }
        let image = try ImageDecoders.decode(data)
        let (decoder, _) = try Corpora.feed(data, format: .png, chunk: 4096)
        for decoded in [image, try #require(decoder.currentImage()), try Corpora.decodePNGWithSimplifiedAPI(data)] {
            #expect(decoded.width == width && decoded.height == height && decoded.layout == .rgba)
            var worst = 0
            for pixel in 0..<width * height {
                for channel in 0..<3 {
                    let at = pixel * pixelBytes + channel * 2
                    let sample = Int(samples[at]) << 8 | Int(samples[at + 1])
                    worst = max(worst, abs(Int(decoded.pixels[pixel * 4 + channel]) - (sample * 255 + 32767) / 65535))
                }
                #expect(decoded.pixels[pixel * 4 + 3] == 255)
            }
            #expect(worst <= 1)
        }
    }

    @Test func aHugeHeaderIsRefusedAtOnce() throws {
        // A valid 65535×65535 IHDR: refused from the header, before any pixel buffer.
        let ihdr = PNGChunk.make("IHDR", [0, 0, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF, 8, 6, 0, 0, 0])
        // libpng's push reader reports the header when it reaches the first IDAT.
        let data: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + ihdr + [0, 0, 0x10, 0] + Array("IDAT".utf8) + [0x78, 0x9C]
        let decoder = try PNGDecoder()
        do {
            _ = try decoder.feed(data, isLast: false)
            Issue.record("accepted a 65535×65535 image")
        } catch {
            #expect(error == .limit("image of 65535x65535 pixels exceeds the limit of 100000000 pixels", width: 65535, height: 65535))
        }
    }

    /// Asked as RGB, a whole PNG is decoded straight into RGB only when it can have no alpha: a
    /// file with a tRNS chunk (PngSuite's t*) or an alpha channel is read as RGBA first (the
    /// chunk walk that checks the file says which), and either way gives the RGBA decode's RGB.
    @Test func rgbOfTransparentAndOpaqueFilesMatchesTheRGBADecode() throws {
        let files = Corpora.files("pngsuite", suffix: ".png").filter {
            let name = ($0 as NSString).lastPathComponent
            return name.hasPrefix("t") || name.hasPrefix("basn") || name.hasPrefix("bgan")
        }
        #expect(files.count >= 20)
        for path in files {
            let data = try Corpora.bytes(path)
            var rgb = DecodeOptions()
            rgb.layout = .rgb
            let direct = try ImageDecoders.decode(data, options: rgb)
            #expect(direct == (try ImageDecoders.decode(data)).converted(to: .rgb), "\(path)")
        }
    }

    @Test func encodesPNGThatDecodesBackToTheSamePixels() throws {
        for path in ["pngsuite/basn6a08.png", "pngsuite/basn2c16.png", "pngsuite/basn0g08.png"] {
            let image = try ImageDecoders.decode(try Corpora.bytes(path))
            for layout in PixelLayout.allCases {
                let converted = image.converted(to: layout)
                for fast in [false, true] {
                    let encoded = try ImageDecoders.encodePNG(converted, fast: fast)
                    #expect(ImageFormat.detect(encoded) == .png)
                    #expect(try Self.decode(encoded, as: layout) == converted, "\(path) as \(layout), fast \(fast)")
                }
            }
        }
    }

    /// Four channels with alpha 255 in every pixel are written as RGB (colour type 2), by both
    /// encoders; one pixel less than opaque keeps RGBA (6). Either way the PNG decodes to the
    /// same RGBA pixels.
    @Test func anOpaqueAlphaChannelIsNotWritten() throws {
        var random = SplitMix(seed: 5)
        let (width, height) = (300, 200)
        var pixels = (0..<(width * height * 4)).map { $0 % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: random.next()) }
        let opaque = DecodedImage(width: width, height: height, layout: .rgba, pixels: pixels, format: .png)
        pixels[(width * (height - 1) + width - 1) * 4 + 3] = 254
        let translucent = DecodedImage(width: width, height: height, layout: .rgba, pixels: pixels, format: .png)
        for fast in [false, true] {
            for (image, colorType) in [(opaque, UInt8(2)), (translucent, 6), (opaque.converted(to: .rgb), 2), (opaque.converted(to: .gray), 0)] {
                let encoded = try ImageDecoders.encodePNG(image, fast: fast)
                #expect(encoded[25] == colorType, "\(image.layout), fast \(fast)")
                #expect(try ImageDecoders.decode(encoded) == image.converted(to: .rgba), "\(image.layout), fast \(fast)")
            }
        }
    }

    /// The fast encoder compresses filtered rows a deflate block at a time (about 256 KiB of rows,
    /// or one row when a row is longer) and writes the chunks and CRCs itself: one block, many
    /// blocks and one row per block all give a PNG that libpng reads back, CRCs checked, to the
    /// same pixels.
    @Test func fastEncodingRoundTripsAcrossDeflateBlocks() throws {
        var random = SplitMix(seed: 11)
        for (width, height, layout) in [(1024, 1024, PixelLayout.rgba), (1700, 1700, .rgb), (300, 7, .gray), (70_000, 3, .rgba)] {
            let count = width * height * layout.channels
            let pixels = (0..<count).map { i in UInt8(truncatingIfNeeded: i / (width * layout.channels) &+ (i % 7 == 0 ? Int(random.next() % 32) : 0)) }
            let image = DecodedImage(width: width, height: height, layout: layout, pixels: pixels, format: .png)
            let encoded = try ImageDecoders.encodePNG(image, fast: true)
            #expect(encoded.count < count / 2, "\(width)x\(height) \(layout): compressed")
            #expect(try Self.decode(encoded, as: layout) == image, "\(width)x\(height) \(layout)")
        }
    }

    /// Noise does not compress: the PNG outgrows the encoder's first guess at its size (half the
    /// pixels), and still holds every pixel; a tall gradient, which compresses, also round-trips.
    @Test func encodedPNGsOfNoiseAndOfGradientsHoldEveryPixel() throws {
        var random = SplitMix(seed: 7)
        let (width, height) = (640, 480)
        let noise = (0..<(width * height * 4)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let gradient = (0..<(width * height * 4)).map { UInt8(truncatingIfNeeded: ($0 / 4 / width) &+ ($0 % 4) * 60) }
        for (name, pixels) in [("noise", noise), ("gradient", gradient)] {
            let image = DecodedImage(width: width, height: height, layout: .rgba, pixels: pixels, format: .png)
            for layout in PixelLayout.allCases {
                let converted = image.converted(to: layout)
                for fast in [false, true] {
                    let encoded = try ImageDecoders.encodePNG(converted, fast: fast)
                    if name == "noise" { #expect(encoded.count > converted.pixels.count / 2 + 65536, "\(layout): the buffer had to grow") }
                    #expect(try Self.decode(encoded, as: layout) == converted, "\(name) as \(layout), fast \(fast)")
                }
            }
        }
    }
}
