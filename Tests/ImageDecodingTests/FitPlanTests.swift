import ImageDecoding
import Testing

@Suite struct FitPlanTests {
    typealias Plan = FitPlan

    func sizes(_ p: Plan) -> [Int] { [p.resampleWidth, p.resampleHeight, p.outputWidth, p.outputHeight, p.offsetX, p.offsetY] }

    @Test func eachFitOfALandscapeIntoASquare() {
        let source = (width: 800, height: 600)
        // cover: the short side fills the box, the long one is cropped around the centre.
        #expect(sizes(Plan(source: source, width: 256, height: 256, fit: .cover)) == [341, 256, 256, 256, 42, 0])
        // contain: the long side fits, the canvas is the box, the image centred on it.
        #expect(sizes(Plan(source: source, width: 256, height: 256, fit: .contain)) == [256, 192, 256, 256, 0, 32])
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
        let cover: [Plan.Position: (Int, Int)] = [
            .center: (42, 0), .leftTop: (0, 0), .left: (0, 0), .rightTop: (85, 0), .right: (85, 0), .rightBottom: (85, 0),
            .top: (42, 0), .bottom: (42, 0), .leftBottom: (0, 0),
        ]
        for (position, offset) in cover {
            let plan = Plan(source: source, width: 256, height: 256, fit: .cover, position: position)
            #expect(plan.offsetX == offset.0 && plan.offsetY == offset.1, "\(position)")
        }
        // A portrait, so that the vertical positions move.
        let tall = Plan(source: (600, 800), width: 256, height: 256, fit: .cover, position: .bottom)
        #expect(sizes(tall) == [256, 341, 256, 256, 0, 85])
        let top = Plan(source: (600, 800), width: 256, height: 256, fit: .cover, position: .top)
        #expect(top.offsetY == 0)
        let padded = Plan(source: source, width: 256, height: 256, fit: .contain, position: .bottom)
        #expect(sizes(padded) == [256, 192, 256, 256, 0, 64])
        let leftTop = Plan(source: (600, 800), width: 256, height: 256, fit: .contain, position: .leftTop)
        #expect(sizes(leftTop) == [192, 256, 256, 256, 0, 0])
        let right = Plan(source: (600, 800), width: 256, height: 256, fit: .contain, position: .right)
        #expect(sizes(right) == [192, 256, 256, 256, 64, 0])
    }

    @Test func smallImagesAreEnlargedUnlessAskedNotTo() {
        // Enlarged: cover scales by the larger ratio (5.12 here) and crops.
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .cover)) == [512, 256, 256, 256, 128, 0])
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .contain)) == [256, 128, 256, 256, 0, 64])
        // Without enlargement: cover keeps the image as it is (smaller than the box), contain pads it.
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .cover, withoutEnlargement: true)) == [100, 50, 100, 50, 0, 0])
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .contain, withoutEnlargement: true)) == [100, 50, 256, 256, 78, 103])
        #expect(sizes(Plan(source: (100, 50), width: 256, height: 256, fit: .fill, withoutEnlargement: true)) == [100, 50, 100, 50, 0, 0])
        // Larger on one side only: cover crops that side to the box, the other stays.
        #expect(sizes(Plan(source: (400, 100), width: 256, height: 256, fit: .cover, withoutEnlargement: true)) == [400, 100, 256, 100, 72, 0])
        // Reduced, withoutEnlargement changes nothing.
        #expect(sizes(Plan(source: (800, 600), width: 256, height: 256, fit: .cover, withoutEnlargement: true)) == [341, 256, 256, 256, 42, 0])
    }

    @Test func extremeAspectRatiosKeepAPixel() {
        #expect(sizes(Plan(source: (10_000, 1), width: 100, height: 100, fit: .inside)) == [100, 1, 100, 1, 0, 0])
        #expect(sizes(Plan(source: (10_000, 1), width: 100, height: 100, fit: .contain)) == [100, 1, 100, 100, 0, 49])
        #expect(sizes(Plan(source: (1, 10_000), width: 100, height: 100, fit: .cover)) == [100, 1_000_000, 100, 100, 0, 499_950])
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
