@testable import ImageDecoding
import Testing
import TestSupport

@Suite struct FitPlanTests {
    typealias Plan = FitPlan

    /// The resampled image's size, the delivered size, the image's place on the canvas.
    func sizes(_ p: Plan) -> [Int] { [p.imageWidth, p.imageHeight, p.outputWidth, p.outputHeight, p.offsetX, p.offsetY] }
    func region(_ p: Plan) -> [Double] { [p.regionX, p.regionY, p.regionWidth, p.regionHeight] }

    @Test func eachFitOfALandscapeIntoASquare() {
        let source = (width: 800, height: 600)
        // cover: the short side fills the box; the source's centre 600 × 600 is resampled to it.
        let cover = Plan(source: source, width: 256, height: 256, fit: .cover)
        #expect(sizes(cover) == [256, 256, 256, 256, 0, 0])
        #expect(region(cover) == [100, 0, 600, 600])
        #expect(cover.decodeSize == (342, 256))
        // contain: the long side fits, the canvas is the box, the image centred on it.
        let contain = Plan(source: source, width: 256, height: 256, fit: .contain)
        #expect(sizes(contain) == [256, 192, 256, 256, 0, 32])
        #expect(region(contain) == [0, 0, 800, 600])
        #expect(sizes(Plan(source: source, width: 256, height: 256, fit: .fill)) == [256, 256, 256, 256, 0, 0])
        #expect(sizes(Plan(source: source, width: 256, height: 256, fit: .inside)) == [256, 192, 256, 192, 0, 0])
        #expect(sizes(Plan(source: source, width: 256, height: 256, fit: .outside)) == [341, 256, 341, 256, 0, 0])
    }

    @Test func oneSideGivenKeepsTheAspectRatioWhateverTheFit() {
        for fit in Plan.Fit.allCases {
            #expect(sizes(Plan(source: (800, 600), width: 400, height: nil, fit: fit)) == [400, 300, 400, 300, 0, 0])
            #expect(sizes(Plan(source: (800, 600), width: nil, height: 150, fit: fit)) == [200, 150, 200, 150, 0, 0])
        }
    }

    @Test func positionsPickTheKeptPartAndThePlaceOnTheCanvas() {
        let source = (width: 800, height: 600)
        let cover: [Plan.Position: Double] = [
            .center: 100, .leftTop: 0, .left: 0, .rightTop: 200, .right: 200, .rightBottom: 200, .top: 100, .bottom: 100, .leftBottom: 0,
        ]
        for (position, x) in cover {
            let plan = Plan(source: source, width: 256, height: 256, fit: .cover, position: position)
            #expect(plan.regionX == x && plan.regionY == 0, "\(position)")
        }
        // A portrait, so that the vertical positions move.
        #expect(region(Plan(source: (600, 800), width: 256, height: 256, fit: .cover, position: .bottom)) == [0, 200, 600, 600])
        #expect(region(Plan(source: (600, 800), width: 256, height: 256, fit: .cover, position: .top)) == [0, 0, 600, 600])
        #expect(sizes(Plan(source: source, width: 256, height: 256, fit: .contain, position: .bottom)) == [256, 192, 256, 256, 0, 64])
        #expect(sizes(Plan(source: (600, 800), width: 256, height: 256, fit: .contain, position: .leftTop)) == [192, 256, 256, 256, 0, 0])
        #expect(sizes(Plan(source: (600, 800), width: 256, height: 256, fit: .contain, position: .right)) == [192, 256, 256, 256, 64, 0])
    }

    @Test func smallImagesAreEnlargedUnlessAskedNotTo() {
        // Enlarged: cover scales by the larger ratio (5.12 here), from the full-size decode.
        let cover = Plan(source: (100, 50), width: 256, height: 256, fit: .cover)
        #expect(sizes(cover) == [256, 256, 256, 256, 0, 0])
        #expect(region(cover) == [25, 0, 50, 50])
        #expect(cover.decodeSize == (100, 50))
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .contain)) == [256, 128, 256, 256, 0, 64])
        // Without enlargement: cover keeps the image as it is (smaller than the box), contain pads it.
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .cover, withoutEnlargement: true)) == [100, 50, 100, 50, 0, 0])
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .contain, withoutEnlargement: true)) == [100, 50, 256, 256, 78, 103])
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .fill, withoutEnlargement: true)) == [100, 50, 100, 50, 0, 0])
        // Larger on one side only: cover crops that side to the box, the other stays.
        let wide = Plan(source: (400, 100), width: 256, height: 256, fit: .cover, withoutEnlargement: true)
        #expect(sizes(wide) == [256, 100, 256, 100, 0, 0])
        #expect(region(wide) == [72, 0, 256, 100])
        // Reduced, withoutEnlargement changes nothing.
        #expect(sizes(Plan(source: (800, 600), width: 256, height: 256, fit: .cover, withoutEnlargement: true)) == [256, 256, 256, 256, 0, 0])
    }

    @Test func extremeAspectRatiosKeepAPixelAndNeverAHugeImage() {
        #expect(sizes(Plan(source: (10_000, 1), width: 100, height: 100, fit: .inside)) == [100, 1, 100, 1, 0, 0])
        #expect(sizes(Plan(source: (10_000, 1), width: 100, height: 100, fit: .contain)) == [100, 1, 100, 100, 0, 49])
        // Covering 100 × 100 with a 1 × 10,000 line: its middle 1 × 1 enlarged, not 100 × 1,000,000.
        let line = Plan(source: (1, 10_000), width: 100, height: 100, fit: .cover)
        #expect(sizes(line) == [100, 100, 100, 100, 0, 0])
        #expect(region(line) == [0, 4999.5, 1, 1])
        #expect(line.decodeSize == (1, 10_000))
    }

    @Test func filledRowsFollowTheRegion() {
        let cover = Plan(source: (600, 800), width: 256, height: 256, fit: .cover)  // rows 100…700 kept
        #expect(cover.filledRows(fraction: 0.1) == 0)
        #expect(cover.filledRows(fraction: 0.5) == 128)
        #expect(cover.filledRows(fraction: 0.9) == 256)
        let contain = Plan(source: (800, 600), width: 256, height: 256, fit: .contain)  // image rows 32…224
        #expect(contain.filledRows(fraction: 0) == 32)
        #expect(contain.filledRows(fraction: 0.5) == 128)
        #expect(contain.filledRows(fraction: 1) == 256)
    }

    /// Each EXIF orientation: the plan carried out on the stored pixels, then turned upright, is
    /// the plan carried out on the upright pixels (crops and canvases to the pixel; no resampling
    /// here, so exactly).
    @Test func orientedImagesAreCroppedAndPaddedAsTheyWillStand() {
        var pixels: [UInt8] = []
        for y in 0..<6 { for x in 0..<10 { pixels += [UInt8(x * 20), UInt8(y * 40), UInt8((x * 7 + y * 13) % 256)] } }
        for orientation in 1...8 {
            let stored = DecodedImage(width: 10, height: 6, layout: .rgb, pixels: pixels, orientation: orientation, format: .jpeg)
            let upright = stored.applyingOrientation()
            let source = (width: upright.width, height: upright.height)
            let short = min(source.width, source.height)
            for position in Plan.Position.allCases {
                for (fit, box) in [(Plan.Fit.cover, (short, short)), (.contain, (source.width + 4, source.height + 3))] {
                    let plan = Plan(source: source, width: box.0, height: box.1, fit: fit, position: position, withoutEnlargement: true)
                    let background = BackgroundColor(red: 1, green: 2, blue: 3)
                    let viaStored = plan.apply(to: stored, upright: true, background: background).applyingOrientation()
                    var flat = upright
                    flat.orientation = 1
                    let viaUpright = plan.apply(to: flat, upright: true, background: background)
                    #expect(viaStored.pixels == viaUpright.pixels && viaStored.width == viaUpright.width, "\(orientation) \(fit) \(position)")
                }
            }
        }
    }

    @Test func backgroundColoursParseOnlyAsHex() {
        #expect(BackgroundColor(hex: "#ff8000") == BackgroundColor(red: 255, green: 128, blue: 0))
        #expect(BackgroundColor(hex: "#FF800080") == BackgroundColor(red: 255, green: 128, blue: 0, alpha: 128))
        for bad in ["ff8000", "#ff800", "#ff80000", "#gg8000", "", "#", "#ff8000ff0"] { #expect(BackgroundColor(hex: bad) == nil, "\(bad)") }
        #expect(BackgroundColor(red: 255, green: 255, blue: 255).bytes(in: .gray) == [255])
        #expect(BackgroundColor(red: 10, green: 20, blue: 30, alpha: 40).bytes(in: .rgb) == [10, 20, 30])
    }

    @Test func cropAndEmbedMoveThePixelsTheyShould() {
        // 4 × 3 RGB, each pixel's red its x, green its y.
        var pixels: [UInt8] = []
        for y in 0..<3 { for x in 0..<4 { pixels += [UInt8(x), UInt8(y), 7] } }
        let image = DecodedImage(width: 4, height: 3, layout: .rgb, pixels: pixels, orientation: 6, format: .png)
        let crop = image.cropped(x: 1, y: 1, width: 2, height: 2)
        #expect(crop.pixels == [1, 1, 7, 2, 1, 7, 1, 2, 7, 2, 2, 7])
        #expect(crop.orientation == 6)
        let canvas = image.cropped(x: 3, y: 2, width: 1, height: 1).embedded(x: 1, y: 0, width: 2, height: 2, background: BackgroundColor(red: 9, green: 9, blue: 9))
        #expect(canvas.pixels == [9, 9, 9, 3, 2, 7, 9, 9, 9, 9, 9, 9])
        let rgba = DecodedImage(width: 1, height: 1, layout: .rgba, pixels: [1, 2, 3, 4], format: .png)
            .embedded(x: 0, y: 1, width: 1, height: 2, background: BackgroundColor(red: 0, green: 0, blue: 0, alpha: 0))
        #expect(rgba.pixels == [0, 0, 0, 0, 1, 2, 3, 4])
    }
}

@Suite struct EnlargingTests {
    @Test func anEnlargedAxisIsInterpolatedBetweenPixelCentres() {
        let row = DecodedImage(width: 2, height: 1, layout: .gray, pixels: [0, 255], format: .png)
        #expect(ImageResampler.resize(row, width: 4, height: 1).pixels == [0, 64, 191, 255])
        let column = DecodedImage(width: 1, height: 2, layout: .gray, pixels: [0, 255], format: .png)
        #expect(ImageResampler.resize(column, width: 1, height: 4).pixels == [0, 64, 191, 255])
        // A flat image stays flat whatever the factor; one pixel is repeated.
        let flat = DecodedImage(width: 3, height: 2, layout: .rgb, pixels: [UInt8](repeating: 77, count: 18), format: .png)
        #expect(Set(ImageResampler.resize(flat, width: 17, height: 11).pixels) == [77])
        let dot = DecodedImage(width: 1, height: 1, layout: .rgb, pixels: [1, 2, 3], format: .png)
        #expect(ImageResampler.resize(dot, width: 3, height: 2).pixels == [UInt8](repeating: 0, count: 0) + Array([[UInt8]](repeating: [1, 2, 3], count: 6).joined()))
    }

    @Test func enlargingOneAxisWhileReducingTheOther() {
        // 8 × 2 gray, columns 0…7 × 32, to 2 × 6: across reduced (box), down enlarged (rows equal).
        var pixels: [UInt8] = []
        for _ in 0..<2 { for x in 0..<8 { pixels.append(UInt8(x * 32)) } }
        let image = DecodedImage(width: 8, height: 2, layout: .gray, pixels: pixels, format: .png)
        let resized = ImageResampler.resize(image, width: 2, height: 6)
        #expect(resized.pixels == Array([[UInt8]](repeating: [48, 176], count: 6).joined()))
    }
}

/// `position: entropy` and `attention` choose the cover crop from the pixels (libvips'
/// smartcrop): the detailed or eye-catching part, wherever it is, and the centre's geometry.
@Suite struct SmartCropTests {
    /// A gray image with a patch of noise (or of skin tone with edges) at `patch`: the rest flat.
    static func image(width: Int, height: Int, patch: (x: Int, y: Int, size: Int), skin: Bool) -> DecodedImage {
        var random = SplitMix(seed: 3)
        var pixels = [UInt8](repeating: 128, count: width * height * 3)
        for y in patch.y..<(patch.y + patch.size) {
            for x in patch.x..<(patch.x + patch.size) {
                let i = (y * width + x) * 3
                if skin {
                    let stripe: UInt8 = (x / 4 + y / 4) % 2 == 0 ? 0 : 60
                    (pixels[i], pixels[i + 1], pixels[i + 2]) = (224 - stripe / 2, 172 - stripe / 2, 140 - stripe / 2)
                } else {
                    for k in 0..<3 { pixels[i + k] = UInt8(truncatingIfNeeded: random.next()) }
                }
            }
        }
        return DecodedImage(width: width, height: height, layout: .rgb, pixels: pixels, format: .png)
    }

    @Test(arguments: [FitPlan.Position.entropy, .attention])
    func theCropFindsThePatchOnEitherSide(_ strategy: FitPlan.Position) {
        for (patchX, expectRight) in [(10, false), (330, true)] {
            let source = Self.image(width: 400, height: 200, patch: (patchX, 60, 60), skin: strategy == .attention)
            let plan = FitPlan(source: (400, 200), width: 100, height: 100, fit: .cover, position: strategy)
            #expect(plan.cropStrategy == strategy)
            let out = plan.apply(to: source, upright: false, background: .black)
            #expect(out.width == 100 && out.height == 100)
            // The patch (not flat gray) fills much of the crop.
            let busy = stride(from: 0, to: out.pixels.count, by: 3).filter { out.pixels[$0] != 128 || out.pixels[$0 + 2] != 128 }.count
            #expect(busy >= 850, "\(strategy), patch at \(patchX): \(busy) of its 900 pixels")
            // And a centred crop would have missed it.
            let centred = FitPlan(source: (400, 200), width: 100, height: 100, fit: .cover).apply(to: source, upright: false, background: .black)
            #expect(centred.pixels.allSatisfy { $0 == 128 }, "patch on the \(expectRight ? "right" : "left")")
        }
    }

    /// Strategies only crop: with `contain` (and when nothing needs cropping) they are the centre.
    @Test func strategiesAreTheCentreWhereNothingIsCropped() {
        let contain = FitPlan(source: (400, 200), width: 100, height: 100, fit: .contain, position: .entropy)
        #expect(contain.cropStrategy == nil)
        #expect(contain == FitPlan(source: (400, 200), width: 100, height: 100, fit: .contain, position: .center))
        #expect(FitPlan(source: (100, 100), width: 100, height: 100, fit: .cover, position: .attention).cropStrategy == nil)
    }

    /// libvips' entropy trimming on a small case worked by hand: slices of ceil(excess / 8) off the
    /// lower-entropy edge of each axis in turn.
    @Test func entropyTrimsTheDullerEdgeFirst() {
        // 20 x 10: columns 0-9 flat, 10-19 two alternating values (entropy 1 bit per channel).
        var pixels = [UInt8](repeating: 50, count: 20 * 10 * 3)
        for y in 0..<10 { for x in 10..<20 where (x + y) % 2 == 0 { for k in 0..<3 { pixels[(y * 20 + x) * 3 + k] = 200 } } }
        let image = DecodedImage(width: 20, height: 10, layout: .rgb, pixels: pixels, format: .png)
        #expect(SmartCrop.origin(of: image, width: 10, height: 10, attention: false) == (10, 0))
    }
}
