import ImageDecoding

/// What a token asks of its image's size, read in one place: `maxPixelSize` and `maxPixelCount`
/// (fit inside, never larger), or a box (`width`, `height`, `fit`, `position`, `background`,
/// `withoutEnlargement`: sharp's resize) for the final image, and `partialMaxPixelSize` for its
/// partial images. The final image, the partial ones, the decode that serves a fetch's tokens and
/// the key two tokens share a decode by all come from here.
struct OutputGeometry: Sendable, Hashable {
    /// Scale down (never up) so the longest side is at most this many pixels.
    var maxPixelSize: Int?
    /// Scale down so the image has at most this many pixels.
    var maxPixelCount: Int?
    /// A box to fit, with how (`FitPlan`); nil: `maxPixelSize` and `maxPixelCount` say the size.
    var box: Box?
    /// What a `contain` canvas shows around the image (opaque black by default, as sharp's).
    var background: BackgroundColor?
    /// The box is for the image turned upright (`applyOrientation`).
    var upright = false
    /// Partial images no larger than this on their longest side; nil: the final image's size.
    var partialMaxPixelSize: Int?

    /// `width` and `height` (one may be left out), and how the image fits them.
    struct Box: Sendable, Hashable {
        var width: Int?
        var height: Int?
        var fit: FitPlan.Fit = .cover
        var position: FitPlan.Position = .center
        var withoutEnlargement = false
    }

    typealias Size = (width: Int, height: Int)

    /// The box's plan for a source of `source`'s stored size, stored with EXIF `orientation`.
    func plan(source: Size, orientation: Int) -> FitPlan? {
        guard let box else { return nil }
        let turned = upright && orientation >= 5 && orientation <= 8
        return FitPlan(
            source: turned ? (source.height, source.width) : source, width: box.width, height: box.height, fit: box.fit,
            position: box.position, withoutEnlargement: box.withoutEnlargement)
    }

    /// The smallest decode of the whole source (stored as it is) that serves the final image.
    func decodeSize(of source: Size, orientation: Int) -> Size {
        guard let plan = plan(source: source, orientation: orientation) else {
            return ImageResampler.fittedSize(width: source.width, height: source.height, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
        }
        let size = plan.decodeSize
        return upright && orientation >= 5 && orientation <= 8 ? (size.height, size.width) : size
    }

    /// The final image (stored as the source is) from `image`, a decode of the whole source of
    /// `source`'s stored size at least `decodeSize`: resampled to the fitted size, or the box's
    /// plan carried out.
    func shaped(_ image: DecodedImage, source: Size) -> DecodedImage {
        var origin: (x: Int, y: Int)?
        return shaped(image, source: source, origin: &origin)
    }

    /// `shaped`, a crop strategy's box kept in `origin` (found in the first frame of an
    /// animation, the same for every other).
    func shaped(_ image: DecodedImage, source: Size, origin: inout (x: Int, y: Int)?) -> DecodedImage {
        if let plan = plan(source: source, orientation: image.orientation) {
            return plan.apply(to: image, upright: upright, background: background ?? .black, origin: &origin)
        }
        let size = ImageResampler.fittedSize(width: source.width, height: source.height, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
        return ImageResampler.resize(image, width: size.width, height: size.height)
    }

    /// A partial image from `image` (a decode of the whole source so far): the final image's
    /// shape, fitted into `partialMaxPixelSize` when there is one.
    func partialShaped(_ image: DecodedImage, source: Size) -> DecodedImage {
        let final = shaped(image, source: source)
        guard let partialMaxPixelSize else { return final }
        let size = ImageResampler.fittedSize(width: final.width, height: final.height, maxPixelSize: partialMaxPixelSize, maxPixelCount: nil)
        return ImageResampler.resize(final, width: size.width, height: size.height)
    }

    /// A partial image's size (stored as the source is), without making it.
    func partialSize(of source: Size, orientation: Int) -> Size {
        var final = ImageResampler.fittedSize(width: source.width, height: source.height, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
        if let plan = plan(source: source, orientation: orientation) {
            let turned = upright && orientation >= 5 && orientation <= 8
            final = turned ? (plan.outputHeight, plan.outputWidth) : (plan.outputWidth, plan.outputHeight)
        }
        guard let partialMaxPixelSize else { return final }
        return ImageResampler.fittedSize(width: final.width, height: final.height, maxPixelSize: partialMaxPixelSize, maxPixelCount: nil)
    }

    /// Refuses a box whose image would hold more than `options.maxPixels` (a thin image enlarged
    /// by one side, or `outside`), before any pixel buffer: what the source's own size is held to.
    /// It fails the token that asked it, never a decode other tokens share: a progressive decode
    /// is never larger than the source (`decodeSize`), and the box is made per token.
    /// With `frames` (an animation's, every one delivered), every frame's pixels count.
    func checkLimit(source: Size, orientation: Int, options: DecodeOptions, frames: Int = 1) throws(DecodeError) {
        guard let plan = plan(source: source, orientation: orientation) else { return }
        let pixels = UInt64(plan.outputWidth) * UInt64(plan.outputHeight) * UInt64(max(1, frames))
        guard pixels > options.maxPixels else { return }
        let asked = frames > 1 ? "\(frames) frames of \(plan.outputWidth)x\(plan.outputHeight)" : "\(plan.outputWidth)x\(plan.outputHeight)"
        throw .limit(
            "the image asked (\(asked) pixels from \(source.width)x\(source.height)) exceeds the limit of \(options.maxPixels) pixels",
            width: plan.outputWidth, height: plan.outputHeight)
    }

    /// The source's EXIF orientation in `bytes`, where the box depends on it (it is for the upright
    /// image); 1 otherwise, without reading them.
    func orientation(of bytes: UnsafeRawBufferPointer, format: ImageFormat?) -> Int {
        guard box != nil, upright, let format else { return 1 }
        return ImageDecoders.recordedOrientation(bytes, format: format)
    }

    /// The memory the box's image takes beside the decode's (an enlargement is larger than its
    /// source), for the decode budget: 0 without a box.
    func boxCost(source: Size?) -> Int {
        guard let source, let plan = plan(source: source, orientation: 1) else { return 0 }
        return OutputDelivery.bitmapCost(width: plan.outputWidth, height: plan.outputHeight)
    }

    /// What the final image depends on (two tokens with the same share a decode).
    var final: OutputGeometry {
        OutputGeometry(maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount, box: box, background: background, upright: upright)
    }

    /// Decodes `bytes` whole and makes the final image (JPEG by DCT scaling, no larger than needed).
    /// With `options.frames` `.all`, an animation's every frame, each shaped as it is decoded.
    func decode(_ bytes: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        if options.frames == .all, let frames = try AnimationDecoder.frames(bytes, options: options) {
            let source = (width: frames.width, height: frames.height)
            let orientation = bytes.withUnsafeBytes { self.orientation(of: $0, format: frames.format) }
            try checkLimit(source: source, orientation: orientation, options: options, frames: frames.count)
            // (One box for every frame: a crop strategy's, found in the first.)
            var origin: (x: Int, y: Int)?
            return try AnimationDecoder.decode(bytes, frames: frames, options: options) { frame in
                shaped(frame, source: source, origin: &origin)
            }
        }
        guard box != nil else {
            return try ImageDecoders.decode(bytes, options: options, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
        }
        let orientation = bytes.withUnsafeBytes { self.orientation(of: $0, format: ImageFormat.detect(bytes)) }
        var source: Size?
        // (At the JPEG's DCT scale: the plan crops its region before it resamples.)
        let image = try ImageDecoders.decode(bytes, options: options, resampling: false) { (w, h) throws(DecodeError) in
            try checkLimit(source: (w, h), orientation: orientation, options: options)
            source = (w, h)
            return decodeSize(of: (w, h), orientation: orientation)
        }
        return shaped(image, source: source ?? (image.width, image.height))
    }

    /// The smallest decode that serves every one of `geometries` from a source of `source`'s
    /// stored size: the largest of their decode sizes.
    static func decodeSize(serving geometries: [OutputGeometry], source: Size, orientation: Int) -> Size {
        let sizes = geometries.map { $0.decodeSize(of: source, orientation: orientation) }
        guard let widest = sizes.map(\.width).max(), let tallest = sizes.map(\.height).max() else { return source }
        return (widest, tallest)
    }
}
