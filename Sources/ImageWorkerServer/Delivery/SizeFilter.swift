/// img2dataset's filters on an image's size (`min_image_size`, `max_image_area`,
/// `max_aspect_ratio`), as a token's output asks them (`minImageSize`, `maxImageArea`,
/// `maxAspectRatio`): checked on the stored size its header announces, before any decode. A
/// quarter turn changes none of the three, so the EXIF orientation does not matter.
struct SizeFilter: Sendable, Equatable {
    /// The shorter side at least this many pixels.
    var minImageSize: Int?
    /// At most this many pixels.
    var maxImageArea: Int64?
    /// The longer side at most this many times the shorter.
    var maxAspectRatio: Double?

    var isEmpty: Bool { minImageSize == nil && maxImageArea == nil && maxAspectRatio == nil }

    /// The first filter an image of `width` × `height` fails, as the token's failure; nil when it
    /// passes them all.
    func refusal(width: Int, height: Int) -> DeliveryFailure? {
        let (shorter, longer) = (min(width, height), max(width, height))
        if let minImageSize, shorter < minImageSize {
            return .filtered(
                "Image of \(width)x\(height) pixels is smaller than minImageSize \(minImageSize) on its shorter side",
                filter: "minImageSize", width: width, height: height)
        }
        if let maxImageArea, Int64(width) * Int64(height) > maxImageArea {
            return .filtered(
                "Image of \(width)x\(height) pixels has more than maxImageArea \(maxImageArea) pixels",
                filter: "maxImageArea", width: width, height: height)
        }
        // (A side of 0 pixels: a ratio past any limit.)
        if let maxAspectRatio, shorter == 0 || Double(longer) / Double(shorter) > maxAspectRatio {
            return .filtered(
                "Image of \(width)x\(height) pixels is longer than maxAspectRatio \(maxAspectRatio) times its shorter side",
                filter: "maxAspectRatio", width: width, height: height)
        }
        return nil
    }
}
