import Testing

@testable import ImageDecoding

@Suite struct ScalingTests {
    func image(_ w: Int, _ h: Int, _ layout: PixelLayout = .gray, _ value: (Int, Int, Int) -> UInt8) -> DecodedImage {
        var pixels: [UInt8] = []
        for y in 0..<h { for x in 0..<w { for c in 0..<layout.channels { pixels.append(value(x, y, c)) } } }
        return DecodedImage(width: w, height: h, layout: layout, pixels: pixels, format: .png)
    }

    @Test func fittedSizesKeepTheAspectRatioAndNeverEnlarge() {
        #expect(ImageResampler.fittedSize(width: 4000, height: 3000, maxPixelSize: 400, maxPixelCount: nil) == (400, 300))
        #expect(ImageResampler.fittedSize(width: 3000, height: 4000, maxPixelSize: 400, maxPixelCount: nil) == (300, 400))
        #expect(ImageResampler.fittedSize(width: 100, height: 50, maxPixelSize: 400, maxPixelCount: nil) == (100, 50))
        let (w, h) = ImageResampler.fittedSize(width: 4000, height: 3000, maxPixelSize: nil, maxPixelCount: 1_000_000)
        #expect(w * h <= 1_000_000 && w >= 1150 && h >= 860)
    }

    /// Found by FuzzDecoders: a header's size (up to 2^31 a side) overflowed the pixel count.
    @Test func fittingAHugeHeaderSizeDoesNotOverflow() {
        let (w, h) = ImageResampler.fittedSize(width: 2_147_483_647, height: 2_147_483_647, maxPixelSize: nil, maxPixelCount: 10_000)
        #expect(w * h <= 10_000 && w >= 90)
    }

    @Test func halvingAveragesEachTwoByTwoBlock() {
        let source = image(4, 2) { x, y, _ in UInt8(x * 10 + y * 100) }
        let half = ImageResampler.resize(source, width: 2, height: 1)
        #expect(half.pixels == [55, 75])  // (0+10+100+110)/4, (20+30+120+130)/4
    }

    @Test func aFlatImageStaysFlatAtAnyScale() {
        let source = image(37, 23, .rgba) { _, _, c in UInt8(40 + c * 50) }
        for (w, h) in [(10, 6), (36, 22), (1, 1), (19, 12)] {
            let scaled = ImageResampler.resize(source, width: w, height: h)
            #expect(scaled.width == w && scaled.height == h)
            #expect(Set(stride(from: 0, to: scaled.pixels.count, by: 4).map { Array(scaled.pixels[$0..<$0 + 4]) }) == [[40, 90, 140, 190]])
        }
    }

    /// The exact area average of each output pixel's footprint, in doubles, with no rounding
    /// between the axes: what the fixed-point resampler approximates.
    func exactAreaAverage(_ image: DecodedImage, _ w: Int, _ h: Int) -> [Double] {
        exactAreaAverage(image, w, h) { x, y, ch in Double(image.pixels[(y * image.width + x) * image.layout.channels + ch]) }
    }

    /// The same of `value(x, y, channel)`.
    func exactAreaAverage(_ image: DecodedImage, _ w: Int, _ h: Int, value: (Int, Int, Int) -> Double) -> [Double] {
        func weights(_ inLength: Int, _ outLength: Int, _ o: Int) -> [(Int, Double)] {
            let scale = Double(inLength) / Double(outLength)
            let start = Double(o) * scale, end = start + scale
            return (Int(start)..<min(inLength, Int(end.rounded(.up)))).map { i in
                (i, max(0, min(end, Double(i + 1)) - max(start, Double(i))) / scale)
            }
        }
        let c = image.layout.channels
        var out: [Double] = []
        for oy in 0..<h {
            for ox in 0..<w {
                for ch in 0..<c {
                    var sum = 0.0
                    for (y, wy) in weights(image.height, h, oy) {
                        for (x, wx) in weights(image.width, w, ox) { sum += value(x, y, ch) * wx * wy }
                    }
                    out.append(sum)
                }
            }
        }
        return out
    }

    @Test func resamplingIsWithinOneLevelOfTheExactAreaAverage() {
        var generator = SystemRandomNumberGenerator()
        for layout in [PixelLayout.gray, .rgb] {
            let source = image(97, 61, layout) { _, _, _ in UInt8.random(in: 0...255, using: &generator) }
            for (w, h) in [(96, 60), (48, 30), (33, 17), (10, 61), (97, 7), (1, 1), (13, 60)] {
                let scaled = ImageResampler.resize(source, width: w, height: h)
                let exact = exactAreaAverage(source, w, h)
                let worst = zip(scaled.pixels, exact).map { abs(Double($0) - $1) }.max() ?? 0
                #expect(worst <= 1.0, "\(layout) \(w)x\(h): off by \(worst)")
            }
        }
    }

    /// RGBA is averaged weighted by alpha (premultiplied): alpha within one level of its exact
    /// area average, colour × alpha within two of its own (8-bit premultiplying and dividing
    /// back each round once), for random pixels, random alpha and opaque rows among them.
    @Test func rgbaIsAveragedWeightedByAlpha() {
        var generator = SystemRandomNumberGenerator()
        let source = image(97, 61, .rgba) { _, y, c in c == 3 && y % 5 == 0 ? 255 : UInt8.random(in: 0...255, using: &generator) }
        func pixel(_ x: Int, _ y: Int, _ c: Int) -> Double { Double(source.pixels[(y * 97 + x) * 4 + c]) }
        for (w, h) in [(96, 60), (48, 30), (33, 17), (10, 61), (97, 7), (1, 1), (13, 60)] {
            let scaled = ImageResampler.resize(source, width: w, height: h)
            let exact = exactAreaAverage(source, w, h) { x, y, c in c == 3 ? pixel(x, y, 3) : pixel(x, y, c) * pixel(x, y, 3) / 255 }
            var worstAlpha = 0.0, worstColour = 0.0
            for i in stride(from: 0, to: scaled.pixels.count, by: 4) {
                let alpha = Double(scaled.pixels[i + 3])
                worstAlpha = max(worstAlpha, abs(alpha - exact[i + 3]))
                for c in 0..<3 { worstColour = max(worstColour, abs(Double(scaled.pixels[i + c]) * alpha / 255 - exact[i + c])) }
            }
            #expect(worstAlpha <= 1.0 && worstColour <= 2.0, "\(w)x\(h): alpha off by \(worstAlpha), colour × alpha by \(worstColour)")
        }
    }

    /// The colour under transparent pixels does not show at the edges of what is visible: an
    /// opaque red half beside a transparent half holding green (as image editors leave it) gives
    /// red edge pixels, at every scale and in both loops; an opaque image is unchanged by it.
    @Test func theColourUnderTransparentPixelsNeverShows() {
        let source = image(65, 64, .rgba) { x, _, c in x < 32 ? [255, 0, 0, 255][c] : [0, 255, 0, 0][c] }
        for (w, h) in [(32, 31), (21, 20), (16, 15), (7, 7), (64, 63)] {
            for portable in [false, true] {
                let scaled = ImageResampler.resize(source, width: w, height: h, portable: portable)
                for i in stride(from: 0, to: scaled.pixels.count, by: 4) {
                    let pixel = Array(scaled.pixels[i..<i + 4])
                    if pixel[3] == 0 { continue }
                    #expect(pixel[0] >= 254 && pixel[1] <= 1 && pixel[2] == 0, "\(w)x\(h): \(pixel)")
                }
            }
        }
        // No transparency: the colour's own average (within one level), alpha 255 throughout.
        let opaque = image(65, 64, .rgba) { x, y, c in c == 3 ? 255 : UInt8((x * 7 + y * 3 + c * 50) % 256) }
        let scaled = ImageResampler.resize(opaque, width: 21, height: 20)
        let exact = exactAreaAverage(opaque, 21, 20)
        #expect(zip(scaled.pixels, exact).allSatisfy { abs(Double($0) - $1) <= 1.0 })
    }

    /// The SSE4.1 loops (used when the CPU has them) sum exactly what the portable ones sum: at
    /// the ends of rows (where three-channel loads are cut short), with an odd number of taps
    /// (an axis shorter than its padded window), and with windows of more than 64 rows.
    @Test func vectorAndPortableResamplingGiveTheSameBytes() {
        var generator = SystemRandomNumberGenerator()
        for layout in [PixelLayout.gray, .rgb, .rgba] {
            for (inW, inH, outW, outH) in [
                (97, 61, 33, 17), (600, 40, 256, 17), (301, 30, 256, 26), (5, 3, 2, 1), (64, 64, 64, 20), (7, 9, 13, 4),
                (3, 3, 1, 1), (9, 130, 2, 1), (331, 186, 256, 144), (1024, 7, 256, 7), (3, 2, 40, 30), (100, 50, 512, 256),
            ] {
                let source = image(inW, inH, layout) { _, _, _ in UInt8.random(in: 0...255, using: &generator) }
                let vector = ImageResampler.resize(source, width: outW, height: outH)
                let portable = ImageResampler.resize(source, width: outW, height: outH, portable: true)
                #expect(vector.width == outW && vector.height == outH)
                #expect(vector == portable, "\(layout) \(inW)x\(inH) → \(outW)x\(outH)")
            }
        }
    }

    @Test func enlargingIsBilinearBetweenPixelCentres() {
        // (fit cover and contain enlarge small images; a box filter would repeat pixels.)
        let source = image(3, 2, .rgb) { x, y, c in UInt8(x * 60 + y * 30 + c) }
        let big = ImageResampler.resize(source, width: 7, height: 5)
        #expect(big.width == 7 && big.height == 5)
        func axis(_ o: Int, _ inLength: Int, _ outLength: Int) -> (Int, Double) {
            let centre = min(max((Double(o) + 0.5) * Double(inLength) / Double(outLength) - 0.5, 0), Double(inLength - 1))
            let first = min(Int(centre), inLength - 2)
            return (first, centre - Double(first))
        }
        var exact: [Double] = []
        for y in 0..<5 {
            let (y0, fy) = axis(y, 2, 5)
            for x in 0..<7 {
                let (x0, fx) = axis(x, 3, 7)
                for c in 0..<3 {
                    func at(_ x: Int, _ y: Int) -> Double { Double(source.pixels[(y * 3 + x) * 3 + c]) }
                    let top = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx
                    let bottom = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx
                    exact.append(top * (1 - fy) + bottom * fy)
                }
            }
        }
        #expect(zip(big.pixels, exact).allSatisfy { abs(Double($0) - $1) <= 1.0 }, "\(big.pixels) vs \(exact)")
    }

    /// Layout conversion (one C function for whole images and the row resampler): luma for grey,
    /// the value repeated for colour, alpha dropped or opaque.
    @Test func layoutConversionsKeepTheirRules() {
        let rgba = DecodedImage(width: 2, height: 1, layout: .rgba, pixels: [10, 200, 30, 77, 255, 0, 0, 0], format: .png)
        func luma(_ r: Int, _ g: Int, _ b: Int) -> UInt8 {
            let sum: Int = r * 19595 + g * 38470 + b * 7471 + 32768
            return UInt8(sum >> 16)
        }
        let luma0 = luma(10, 200, 30)
        let luma1 = luma(255, 0, 0)
        #expect(rgba.converted(to: .rgb).pixels == [10, 200, 30, 255, 0, 0])
        #expect(rgba.converted(to: .gray).pixels == [luma0, luma1])
        let gray = DecodedImage(width: 2, height: 1, layout: .gray, pixels: [5, 250], format: .png)
        #expect(gray.converted(to: .rgba).pixels == [5, 5, 5, 255, 250, 250, 250, 255])
        #expect(gray.converted(to: .rgb).pixels == [5, 5, 5, 250, 250, 250])
        #expect(rgba.converted(to: .rgb).converted(to: .rgba).pixels == [10, 200, 30, 255, 255, 0, 0, 255])
    }

    @Test func orientationsTurnTheImageUpright() {
        // 2×1: left pixel 1, right pixel 2.
        let source = image(2, 1) { x, _, _ in UInt8(x + 1) }
        func oriented(_ o: Int) -> DecodedImage { var i = source; i.orientation = o; return i.applyingOrientation() }
        #expect(oriented(1).pixels == [1, 2])
        #expect(oriented(2).pixels == [2, 1])
        #expect(oriented(3).pixels == [2, 1])
        #expect(oriented(6).width == 1 && oriented(6).height == 2)
        #expect(oriented(6).pixels == [1, 2], "rotated 90° clockwise: the left pixel goes on top")
        #expect(oriented(8).pixels == [2, 1], "rotated 90° counter-clockwise: the right pixel goes on top")
        #expect(oriented(6).orientation == 1)
    }

    @Test(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)))
    func jpegScalingUsesTheDCTAndThenResamples() throws {
        let data = try Corpora.bytes("jpeg/testorig.jpg")  // 227×149
        let fitted = try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: 50, maxPixelCount: nil)
        #expect(fitted.width == 50 && fitted.height == 32)
        // The DCT gave 57×38 (1/4); resampling that must equal what we got.
        var quarter = DecodeOptions()
        quarter.scaleDenominator = 4
        let dct = try ImageDecoders.decode(data, options: quarter)
        #expect(dct.width == 57 && dct.height == 38)
        #expect(ImageResampler.resize(dct, width: 50, height: 32) == fitted)
    }

    /// PNG scale-down reads rows one at a time and resamples them as they come; the result must be
    /// exactly the full-size decode resampled, for every layout and several sizes.
    @Test(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)), arguments: PNGDecodingTests.valid + PNGDecodingTests.edge)
    func pngScalingRowByRowEqualsDecodingThenResampling(_ path: String) throws {
        let data = try Corpora.bytes(path)
        for layout in [PixelLayout.rgba, .rgb, .gray] {
            var options = DecodeOptions()
            options.layout = layout
            guard let full = try? ImageDecoders.decode(data, options: options) else { continue }
            for (size, count) in [(1, nil), (7, nil), (max(1, max(full.width, full.height) - 1), nil), (nil, 50)] as [(Int?, Int?)] {
                let target = ImageResampler.fittedSize(width: full.width, height: full.height, maxPixelSize: size, maxPixelCount: count)
                let scaled = try ImageDecoders.decode(data, options: options, maxPixelSize: size, maxPixelCount: count)
                #expect(scaled == ImageResampler.resize(full, width: target.width, height: target.height), "\(path) \(layout) \(size ?? 0) \(count ?? 0)")
            }
        }
    }

    @Test func pngScalingRowByRowOnALargerImage() throws {
        // 1003×601 with detail in every channel, so uneven footprints and alpha all count.
        let source = image(1003, 601, .rgba) { x, y, c in UInt8(truncatingIfNeeded: x * (c + 1) &* 7 &+ y * (3 - c) &* 13 &+ (x ^ y)) }
        let png = try ImageDecoders.encodePNG(source)
        for (size, count) in [(500, nil), (333, nil), (1002, nil), (nil, 10_000)] as [(Int?, Int?)] {
            let target = ImageResampler.fittedSize(width: 1003, height: 601, maxPixelSize: size, maxPixelCount: count)
            let scaled = try ImageDecoders.decode(png, options: DecodeOptions(), maxPixelSize: size, maxPixelCount: count)
            #expect(scaled == ImageResampler.resize(source, width: target.width, height: target.height))
        }
        // A truncated file is an error that says so, not a half image.
        #expect(throws: DecodeError.self) {
            try ImageDecoders.decode(Array(png.prefix(png.count / 2)), options: DecodeOptions(), maxPixelSize: 100, maxPixelCount: nil)
        }
    }

    @Test(.enabled(if: Corpora.present, Comment(rawValue: Corpora.absent)), arguments: PNGDecodingTests.corrupt)
    func corruptPNGsFailWhenScaledToo(_ path: String) throws {
        let data = try Corpora.bytes(path)
        #expect(throws: DecodeError.self) { try ImageDecoders.decode(data, options: DecodeOptions(), maxPixelSize: 8, maxPixelCount: nil) }
    }
}
