/// How an image is made to fit a box of `width` × `height`, in sharp's words (its `resize`
/// options, which img2dataset's `resize_mode` and Pillow's `ImageOps.fit`/`pad` also map to):
/// what size to resample the image to, and then which part of it to keep (`cover`) or where to
/// put it on a canvas of the background (`contain`). Sizes are of the image as delivered (upright
/// when orientation is applied): the caller turns the plan's resample size back to the stored
/// orientation.
public struct FitPlan: Sendable, Equatable {
    public enum Fit: String, Sendable, CaseIterable {
        /// Keep the aspect ratio; cover the box, cropping what lies outside it (at `position`).
        case cover
        /// Keep the aspect ratio; fit inside the box, the rest of it filled with the background.
        case contain
        /// Stretch to the box, aspect ratio ignored.
        case fill
        /// Keep the aspect ratio; as large as possible within the box (no canvas, no crop).
        case inside
        /// Keep the aspect ratio; as small as possible while covering the box (no crop).
        case outside
    }

    /// Which part of a `cover` image is kept, or where a `contain` image sits on its canvas.
    public enum Position: String, Sendable, CaseIterable {
        case center
        case top
        case rightTop = "right top"
        case right
        case rightBottom = "right bottom"
        case bottom
        case leftBottom = "left bottom"
        case left
        case leftTop = "left top"
        /// `cover` only: the part with the most detail, or most likely to draw the eye
        /// (`SmartCrop`); chosen from the pixels, so it is centred until they are seen.
        case entropy
        case attention

        /// Chosen from the pixels rather than a place.
        public var isStrategy: Bool { self == .entropy || self == .attention }

        /// Where along each axis, 0 (left, top), 1 (centre) or 2 (right, bottom), in halves of the slack.
        var halves: (x: Int, y: Int) {
            switch self {
            case .center, .entropy, .attention: return (1, 1)
            case .top: return (1, 0)
            case .rightTop: return (2, 0)
            case .right: return (2, 1)
            case .rightBottom: return (2, 2)
            case .bottom: return (1, 2)
            case .leftBottom: return (0, 2)
            case .left: return (0, 1)
            case .leftTop: return (0, 0)
            }
        }
    }

    public typealias Size = (width: Int, height: Int)

    /// The source's size the plan is for (as delivered: upright when orientation is applied).
    public var sourceWidth: Int
    public var sourceHeight: Int
    /// Source to delivered pixels, per axis (equal but for `fill`).
    public var scaleX: Double
    public var scaleY: Double
    /// The part of the source kept, in its pixels: all of it but for `cover`, which crops.
    public var regionX: Double
    public var regionY: Double
    public var regionWidth: Double
    public var regionHeight: Double
    /// The image the region is resampled to.
    public var imageWidth: Int
    public var imageHeight: Int
    /// The delivered size: the image's, or the canvas' (`contain`), with the image at `offset`.
    public var outputWidth: Int
    public var outputHeight: Int
    public var offsetX: Int
    public var offsetY: Int
    /// `cover` with `entropy` or `attention`: the crop is chosen from the pixels, the region above
    /// being the centre's until then.
    public var cropStrategy: Position?

    /// The plan for an image of `source` size into a box of `width` × `height`; a side not given
    /// follows from the other by the image's aspect ratio (and `fit` then has nothing to decide).
    /// `withoutEnlargement`: never resampled larger than the image, so the output may be smaller
    /// than the box (sharp's rule; `cover` then keeps what there is, `contain` pads to the box).
    public init(source: Size, width: Int?, height: Int?, fit: Fit = .cover, position: Position = .center, withoutEnlargement: Bool = false) {
        precondition(source.width > 0 && source.height > 0 && (width ?? 1) > 0 && (height ?? 1) > 0 && (width != nil || height != nil))
        let sw = Double(source.width), sh = Double(source.height)
        // Each side's scale to reach the box.
        let sx = width.map { Double($0) / sw }
        let sy = height.map { Double($0) / sh }
        var scaleX: Double, scaleY: Double
        let both = sx != nil && sy != nil
        switch (sx, sy) {
        case (let x?, nil): (scaleX, scaleY) = (x, x)
        case (nil, let y?): (scaleX, scaleY) = (y, y)
        case (let x?, let y?):
            switch fit {
            case .fill: (scaleX, scaleY) = (x, y)
            case .cover, .outside: (scaleX, scaleY) = (max(x, y), max(x, y))
            case .contain, .inside: (scaleX, scaleY) = (min(x, y), min(x, y))
            }
        case (nil, nil): preconditionFailure("no side")
        }
        if withoutEnlargement {
            scaleX = min(scaleX, 1)
            scaleY = min(scaleY, 1)
        }
        // The side the box sets exactly is exact; the other rounds (at least 1 pixel).
        func side(_ scale: Double, _ length: Double, exact: Int?) -> Int {
            if let exact, scale == Double(exact) / length { return exact }
            return max(1, Int((length * scale).rounded()))
        }
        var iw = side(scaleX, sw, exact: width)
        var ih = side(scaleY, sh, exact: height)
        (regionX, regionY, regionWidth, regionHeight) = (0, 0, sw, sh)
        let halves = position.halves
        var (ow, oh, ox, oy) = (iw, ih, 0, 0)
        if both, let width, let height {
            switch fit {
            case .cover where iw > width || ih > height:
                // The box's part of the scaled image, taken from the source before resampling
                // (the resampled image is never larger than the box, however the source is shaped).
                (iw, ih) = (min(iw, width), min(ih, height))
                (ow, oh) = (iw, ih)
                regionWidth = min(sw, Double(iw) / scaleX)
                regionHeight = min(sh, Double(ih) / scaleY)
                regionX = (sw - regionWidth) * Double(halves.x) / 2
                regionY = (sh - regionHeight) * Double(halves.y) / 2
                if position.isStrategy { cropStrategy = position }
            case .contain:
                (ow, oh) = (max(width, iw), max(height, ih))
                (ox, oy) = ((ow - iw) * halves.x / 2, (oh - ih) * halves.y / 2)
            default:
                break
            }
        }
        (sourceWidth, sourceHeight, self.scaleX, self.scaleY) = (source.width, source.height, scaleX, scaleY)
        (imageWidth, imageHeight, outputWidth, outputHeight, offsetX, offsetY) = (iw, ih, ow, oh, ox, oy)
    }

    /// The smallest decode of the whole source that serves the plan: the source scaled as the
    /// plan scales it, never larger than the source (an enlargement resamples the full-size
    /// decode's region).
    public var decodeSize: Size {
        (min(sourceWidth, max(1, Int((Double(sourceWidth) * scaleX).rounded(.up)))),
         min(sourceHeight, max(1, Int((Double(sourceHeight) * scaleY).rounded(.up)))))
    }
}
