import Testing

@testable import ImageWorkerServer

/// img2dataset's size filters on a header's size: each at its boundary, in its order, the same
/// for an image turned a quarter, and a side of 0 refused by a ratio.
@Suite struct SizeFilterTests {
    func failing(_ filter: SizeFilter, _ width: Int, _ height: Int) -> String? {
        guard case .filtered(_, let name, let w, let h)? = filter.refusal(width: width, height: height) else { return nil }
        #expect(w == width && h == height)
        return name
    }

    @Test func eachFilterAtItsBoundary() {
        #expect(SizeFilter().isEmpty && SizeFilter().refusal(width: 1, height: 100_000) == nil)
        let small = SizeFilter(minImageSize: 149)
        #expect(failing(small, 227, 149) == nil)
        #expect(failing(small, 227, 148) == "minImageSize")
        let area = SizeFilter(maxImageArea: 227 * 149)
        #expect(failing(area, 227, 149) == nil)
        #expect(failing(area, 228, 149) == "maxImageArea")
        let ratio = SizeFilter(maxAspectRatio: 2)
        #expect(failing(ratio, 200, 100) == nil)
        #expect(failing(ratio, 201, 100) == "maxAspectRatio")
        #expect(failing(ratio, 0, 100) == "maxAspectRatio")
    }

    /// min(w, h), w × h and max/min do not change when the sides swap (EXIF orientations 5–8).
    @Test func aQuarterTurnChangesNothing() {
        let filter = SizeFilter(minImageSize: 100, maxImageArea: 50_000, maxAspectRatio: 3)
        for (w, h) in [(99, 400), (400, 99), (300, 200), (200, 300), (301, 100), (100, 301), (150, 400)] {
            #expect(failing(filter, w, h) == failing(filter, h, w), "\(w)x\(h)")
        }
    }

    /// The first that fails is named, in the order of the options: size, area, ratio.
    @Test func theFirstFailingFilterIsNamed() {
        let filter = SizeFilter(minImageSize: 10, maxImageArea: 100, maxAspectRatio: 2)
        #expect(failing(filter, 5, 500) == "minImageSize")
        #expect(failing(filter, 50, 30) == "maxImageArea")
        #expect(failing(filter, 10, 3) == "minImageSize")
        #expect(failing(filter, 30, 3) == "minImageSize")
        let wide = SizeFilter(maxImageArea: 10_000, maxAspectRatio: 2)
        #expect(failing(wide, 90, 30) == "maxAspectRatio")
    }
}
