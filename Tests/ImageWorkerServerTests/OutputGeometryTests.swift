import Testing

@testable import ImageWorkerServer

/// The one reading of a token's size options: the final image, its partial images, and the
/// decode that serves several tokens of a fetch.
struct OutputGeometryTests {
    @Test func theFinalSizeFitsAndNeverEnlarges() {
        #expect(OutputGeometry().finalSize(of: (4000, 3000)) == (4000, 3000))
        #expect(OutputGeometry(maxPixelSize: 512).finalSize(of: (4000, 3000)) == (512, 384))
        #expect(OutputGeometry(maxPixelSize: 512).finalSize(of: (300, 200)) == (300, 200), "never larger")
        let counted = OutputGeometry(maxPixelCount: 10_000).finalSize(of: (400, 100))
        #expect(counted.width * counted.height <= 10_000 && counted.width == 4 * counted.height)
    }

    @Test func partialImagesFitInsideTheFinalSize() {
        let g = OutputGeometry(maxPixelSize: 1000, partialMaxPixelSize: 100)
        #expect(g.partialSize(of: (4000, 2000)) == (100, 50))
        #expect(OutputGeometry(maxPixelSize: 80, partialMaxPixelSize: 100).partialSize(of: (4000, 2000)) == (80, 40))
        #expect(OutputGeometry(maxPixelSize: 80).partialSize(of: (4000, 2000)) == (80, 40), "none: the final size")
    }

    @Test func oneDecodeServesTheLargestFinalSize() {
        let sizes = [OutputGeometry(maxPixelSize: 64), OutputGeometry(maxPixelSize: 256, partialMaxPixelSize: 16)]
        #expect(OutputGeometry.decodeSize(serving: sizes, source: (1024, 512)) == (256, 128))
        #expect(OutputGeometry.decodeSize(serving: [], source: (10, 20)) == (10, 20))
        #expect(sizes[1].final == OutputGeometry(maxPixelSize: 256), "partial images do not change the decode a token shares")
    }
}
