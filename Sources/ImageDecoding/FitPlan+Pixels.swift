/// A plan carried out on pixels: its region cropped from a decode of the whole source (at any
/// scale), resampled to the plan's image, placed on its canvas. The pixels may be stored turned
/// (an EXIF `orientation` not applied yet, and the plan made for the upright image): the work is
/// done in the stored orientation, so that turning the result upright afterwards gives the plan's
/// image.
extension FitPlan {
    public struct Rect: Sendable, Equatable {
        public var x: Double, y: Double, width: Double, height: Double

        public init(x: Double, y: Double, width: Double, height: Double) {
            (self.x, self.y, self.width, self.height) = (x, y, width, height)
        }

        /// Where this rectangle of an upright image of `upright` size lies in the image as stored
        /// with EXIF `orientation` (1…8; 5…8 swap the sides).
        public func stored(orientation: Int, upright: (width: Double, height: Double)) -> Rect {
            let (x1, y1) = (x + width, y + height)
            // The stored image's size: the upright one's, sides swapped for 5…8.
            let (sw, sh) = orientation >= 5 && orientation <= 8 ? (upright.height, upright.width) : (upright.width, upright.height)
            switch orientation {
            case 2: return Rect(x: sw - x1, y: y, width: width, height: height)
            case 3: return Rect(x: sw - x1, y: sh - y1, width: width, height: height)
            case 4: return Rect(x: x, y: sh - y1, width: width, height: height)
            case 5: return Rect(x: y, y: x, width: height, height: width)
            case 6: return Rect(x: y, y: sh - x1, width: height, height: width)
            case 7: return Rect(x: sw - y1, y: sh - x1, width: height, height: width)
            case 8: return Rect(x: sw - y1, y: x, width: height, height: width)
            default: return self
            }
        }
    }

    /// The plan's image from `image`, a decode of the whole source at any scale, stored with
    /// `orientation` (the plan being for the upright source when `upright`), on a canvas of
    /// `background` where the plan pads. The result is stored like `image` (orientation kept).
    public func apply(to image: DecodedImage, upright: Bool, background: BackgroundColor) -> DecodedImage {
        var origin: (x: Int, y: Int)?
        return apply(to: image, upright: upright, background: background, origin: &origin)
    }

    /// `apply`, the crop strategy's box kept in `origin` (where it found it, when nil; taken from
    /// it otherwise): every frame of an animation cropped where its first frame was.
    public func apply(to image: DecodedImage, upright: Bool, background: BackgroundColor, origin found: inout (x: Int, y: Int)?) -> DecodedImage {
        let orientation = upright ? image.orientation : 1
        let turned = orientation >= 5 && orientation <= 8
        if let strategy = cropStrategy {
            // The whole image at the cover scale, then the box where the strategy finds it (in
            // the stored pixels: a turned image's box is turned too).
            let full = (width: max(imageWidth, Int((Double(sourceWidth) * scaleX).rounded())),
                        height: max(imageHeight, Int((Double(sourceHeight) * scaleY).rounded())))
            let (fullWidth, fullHeight) = turned ? (full.height, full.width) : (full.width, full.height)
            let (boxWidth, boxHeight) = turned ? (imageHeight, imageWidth) : (imageWidth, imageHeight)
            let scaled = ImageResampler.resize(image, width: fullWidth, height: fullHeight)
            // Found in the image as it will stand, taken from it as it is stored.
            let origin = found ?? {
                var standing = scaled
                standing.orientation = orientation
                return SmartCrop.origin(
                    of: standing.applyingOrientation(), width: imageWidth, height: imageHeight, attention: strategy == .attention)
            }()
            found = origin
            let box = Rect(x: Double(origin.x), y: Double(origin.y), width: Double(imageWidth), height: Double(imageHeight))
                .stored(orientation: orientation, upright: (Double(full.width), Double(full.height)))
            return scaled.cropped(x: Int(box.x.rounded()), y: Int(box.y.rounded()), width: boxWidth, height: boxHeight)
        }
        // The decode as the plan sees it (upright) and its scale against the plan's source.
        let (uw, uh) = turned ? (Double(image.height), Double(image.width)) : (Double(image.width), Double(image.height))
        let (kx, ky) = (uw / Double(sourceWidth), uh / Double(sourceHeight))
        let region = Rect(x: regionX * kx, y: regionY * ky, width: regionWidth * kx, height: regionHeight * ky)
            .stored(orientation: orientation, upright: (uw, uh))
        // Whole pixels of the decode, at least one on each side.
        let x0 = min(max(0, Int(region.x.rounded())), image.width - 1)
        let y0 = min(max(0, Int(region.y.rounded())), image.height - 1)
        let x1 = max(x0 + 1, min(image.width, Int((region.x + region.width).rounded())))
        let y1 = max(y0 + 1, min(image.height, Int((region.y + region.height).rounded())))
        let cropped = image.cropped(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        let (width, height) = turned ? (imageHeight, imageWidth) : (imageWidth, imageHeight)
        let resampled = ImageResampler.resize(cropped, width: width, height: height)
        guard outputWidth != imageWidth || outputHeight != imageHeight else { return resampled }
        // A see-through background makes the canvas RGBA, whatever the image's layout.
        let base = background.alpha < 255 && resampled.layout != .rgba ? resampled.converted(to: .rgba) : resampled
        let placed = Rect(x: Double(offsetX), y: Double(offsetY), width: Double(imageWidth), height: Double(imageHeight))
            .stored(orientation: orientation, upright: (Double(outputWidth), Double(outputHeight)))
        let (canvasWidth, canvasHeight) = turned ? (outputHeight, outputWidth) : (outputWidth, outputHeight)
        return base.embedded(x: Int(placed.x), y: Int(placed.y), width: canvasWidth, height: canvasHeight, background: background)
    }

    /// Of the delivered image's rows, how many come from the source's first `fraction` of rows
    /// (a partial image while rows arrive from the top; as the plan is laid out, not turned).
    public func filledRows(fraction: Double) -> Int {
        guard fraction < 1 else { return outputHeight }
        let rows = max(0, min(1, (fraction * Double(sourceHeight) - regionY) / regionHeight)) * Double(imageHeight)
        return min(outputHeight, offsetY + Int(rows))
    }
}
