import ImageDecoding
import Testing

@testable import ImageWorkerServer

/// The one reading of a token's size options: the final image, its partial images, and the
/// decode that serves several tokens of a fetch.
struct OutputGeometryTests {
    func image(_ width: Int, _ height: Int, orientation: Int = 1) -> DecodedImage {
        DecodedImage(
            width: width, height: height, layout: .rgb, pixels: [UInt8](repeating: 9, count: width * height * 3), orientation: orientation,
            format: .jpeg)
    }

    @Test func theFinalSizeFitsAndNeverEnlarges() {
        #expect(OutputGeometry().decodeSize(of: (4000, 3000), orientation: 1) == (4000, 3000))
        #expect(OutputGeometry(maxPixelSize: 512).decodeSize(of: (4000, 3000), orientation: 1) == (512, 384))
        #expect(OutputGeometry(maxPixelSize: 512).decodeSize(of: (300, 200), orientation: 1) == (300, 200), "never larger")
        let counted = OutputGeometry(maxPixelCount: 10_000).decodeSize(of: (400, 100), orientation: 1)
        #expect(counted.width * counted.height <= 10_000 && counted.width == 4 * counted.height)
        #expect(OutputGeometry(maxPixelSize: 512).shaped(image(4000, 3000), source: (4000, 3000)).width == 512)
    }

    @Test func partialImagesFitInsideTheFinalSize() {
        let g = OutputGeometry(maxPixelSize: 1000, partialMaxPixelSize: 100)
        #expect(g.partialSize(of: (4000, 2000), orientation: 1) == (100, 50))
        #expect(OutputGeometry(maxPixelSize: 80, partialMaxPixelSize: 100).partialSize(of: (4000, 2000), orientation: 1) == (80, 40))
        #expect(OutputGeometry(maxPixelSize: 80).partialSize(of: (4000, 2000), orientation: 1) == (80, 40), "none: the final size")
        var boxed = OutputGeometry(box: .init(width: 300, height: 100, fit: .cover), partialMaxPixelSize: 60)
        #expect(boxed.partialSize(of: (4000, 2000), orientation: 1) == (60, 20))
        let partial = boxed.partialShaped(image(500, 250), source: (4000, 2000))
        #expect((partial.width, partial.height) == (60, 20))
        boxed.partialMaxPixelSize = nil
        #expect(boxed.partialSize(of: (4000, 2000), orientation: 1) == (300, 100))
    }

    @Test func oneDecodeServesTheLargestFinalSize() {
        let sizes = [OutputGeometry(maxPixelSize: 64), OutputGeometry(maxPixelSize: 256, partialMaxPixelSize: 16)]
        #expect(OutputGeometry.decodeSize(serving: sizes, source: (1024, 512), orientation: 1) == (256, 128))
        #expect(OutputGeometry.decodeSize(serving: [], source: (10, 20), orientation: 1) == (10, 20))
        #expect(sizes[1].final == OutputGeometry(maxPixelSize: 256), "partial images do not change the decode a token shares")
        // A cover box needs the whole image at its scale: the short side at the box's.
        let cover = OutputGeometry(box: .init(width: 128, height: 128, fit: .cover))
        #expect(OutputGeometry.decodeSize(serving: sizes + [cover], source: (1024, 512), orientation: 1) == (256, 128))
        #expect(cover.decodeSize(of: (1024, 512), orientation: 1) == (256, 128))
        #expect(cover.decodeSize(of: (100, 50), orientation: 1) == (100, 50), "enlarged from the full-size decode")
        #expect(cover.final != OutputGeometry(box: .init(width: 128, height: 128, fit: .contain)).final)
    }

    /// With applyOrientation the box is for the upright image: a fill of a photo stored turned
    /// (orientation 6) decodes and resamples its stored sides the other way round.
    @Test func aBoxIsForTheUprightImageWhenOrientationIsApplied() {
        var fill = OutputGeometry(box: .init(width: 100, height: 400, fit: .fill))
        #expect(fill.decodeSize(of: (1000, 800), orientation: 6) == (100, 400))
        fill.upright = true
        #expect(fill.decodeSize(of: (1000, 800), orientation: 6) == (400, 100))
        let shaped = fill.shaped(image(1000, 800, orientation: 6), source: (1000, 800))
        #expect((shaped.width, shaped.height, shaped.orientation) == (400, 100, 6))
        #expect((shaped.applyingOrientation().width, shaped.applyingOrientation().height) == (100, 400))
    }

    @Test func aBoxThatWouldMakeTooManyPixelsIsRefusedFirst() {
        var options = DecodeOptions()
        options.maxPixels = 5_000_000
        // A thin line, one side asked: the other follows the aspect ratio (16,384 × 1,638,400).
        let wide = OutputGeometry(box: .init(width: 16_384))
        #expect(throws: DecodeError.self) { try wide.checkLimit(source: (10, 1000), orientation: 1, options: options) }
        #expect(throws: Never.self) { try wide.checkLimit(source: (1000, 10), orientation: 1, options: options) }
        #expect(throws: Never.self) { try OutputGeometry(maxPixelSize: 5).checkLimit(source: (10, 1000), orientation: 1, options: options) }
        #expect(wide.boxCost(source: (1000, 10)) == 16_384 * 164 * 4)
        #expect(OutputGeometry().boxCost(source: (1000, 10)) == 0)
    }
}
