internal import CImageCodecs

/// Good-quality downscaling: each output pixel is the area-weighted average of the input pixels
/// it covers (a box filter of the exact footprint), separably, rows then columns.
public enum ImageResampler {
    /// The size that fits `maxPixelSize` (longest side) and `maxPixelCount`, keeping the aspect
    /// ratio; never larger than the image.
    public static func fittedSize(width: Int, height: Int, maxPixelSize: Int?, maxPixelCount: Int?) -> (width: Int, height: Int) {
        var scale = 1.0
        if let maxPixelSize, maxPixelSize > 0 {
            scale = min(scale, Double(maxPixelSize) / Double(max(width, height)))
        }
        if let maxPixelCount, maxPixelCount > 0 {
            // In doubles: a header's size may be anything up to 2^31 per side.
            scale = min(scale, (Double(maxPixelCount) / (Double(width) * Double(height))).squareRoot())
        }
        guard scale < 1 else { return (width, height) }
        var w = max(1, Int((Double(width) * scale).rounded(.down)))
        var h = max(1, Int((Double(height) * scale).rounded(.down)))
        if let maxPixelCount, maxPixelCount > 0 {
            while w * h > maxPixelCount && (w > 1 || h > 1) {
                if w >= h { w -= 1 } else { h -= 1 }
            }
        }
        return (w, h)
    }

    public static func resize(_ image: DecodedImage, width: Int, height: Int) -> DecodedImage {
        resize(image, width: width, height: height, portable: false)
    }

    /// `portable`: the portable C loops only, never the vector ones; the same bytes (a test holds
    /// them to that).
    static func resize(_ image: DecodedImage, width: Int, height: Int, portable: Bool) -> DecodedImage {
        guard width != image.width || height != image.height else { return image }
        var resized = image.pixels.withUnsafeBufferPointer { pixels in
            resize(
                BorrowedPixels(width: image.width, height: image.height, layout: image.layout, bytes: pixels), width: width, height: height,
                orientation: image.orientation, format: image.format, portable: portable)
        }
        resized.animation = image.animation
        resized.iccProfile = image.iccProfile
        return resized
    }

    /// `resize` of pixels lent by a decoder (no copy of them first); at their own size, a copy.
    public static func resize(
        _ frame: BorrowedPixels, width: Int, height: Int, orientation: Int = 1, format: ImageFormat
    ) -> DecodedImage {
        resize(frame, width: width, height: height, orientation: orientation, format: format, portable: false)
    }

    private static func resize(
        _ frame: BorrowedPixels, width: Int, height: Int, orientation: Int, format: ImageFormat, portable: Bool
    ) -> DecodedImage {
        if width == frame.width && height == frame.height {
            return DecodedImage(
                width: width, height: height, layout: frame.layout, pixels: Array(frame.bytes), orientation: orientation, format: format)
        }
        precondition(width > 0 && height > 0, "resize to an empty image")
        let count = width * height * frame.layout.channels
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let status = (portable ? iw_resize_portable : iw_resize)(
                frame.bytes.baseAddress, UInt32(frame.width), UInt32(frame.height), Int32(frame.layout.channels), buffer.baseAddress,
                UInt32(width), UInt32(height))
            precondition(status == 0, "out of memory while resampling")
            initialized = count
        }
        return DecodedImage(width: width, height: height, layout: frame.layout, pixels: pixels, orientation: orientation, format: format)
    }
}

/// `ImageResampler.resize` for rows that arrive one at a time, top to bottom: only the output and
/// the few resampled rows that the next output row covers are held, never the input image. The
/// same C resampler (`iw_resample.c`) does both, so the result is identical to `resize`.
final class RowResampler {
    let inWidth: Int, inHeight: Int, outWidth: Int, outHeight: Int, channels: Int
    private let handle: OpaquePointer

    init(inWidth: Int, inHeight: Int, outWidth: Int, outHeight: Int, channels: Int) {
        (self.inWidth, self.inHeight, self.outWidth, self.outHeight, self.channels) = (inWidth, inHeight, outWidth, outHeight, channels)
        guard
            let handle = iw_resampler_new(
                UInt32(inWidth), UInt32(inHeight), UInt32(outWidth), UInt32(outHeight), Int32(channels), nil)
        else { preconditionFailure("out of memory while resampling") }
        self.handle = handle
    }

    deinit { iw_resampler_free(handle) }

    /// Output rows from the top that are final.
    var completedRows: Int { Int(iw_resampler_completed_rows(handle)) }

    /// Takes the next input row as 8-bit RGBA (`inWidth * 4` bytes, as libpng's readers give
    /// rows), converted to this resampler's channels first (`DecodedImage.converted`'s rules).
    func push(rgba row: UnsafePointer<UInt8>) {
        iw_resampler_push_rgba(handle, row)
    }

    /// The output so far (rows past `completedRows` are not final).
    func withOutput<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: iw_resampler_output(handle), count: outWidth * outHeight * channels))
    }

    var output: [UInt8] { withOutput { Array($0) } }
}

extension DecodedImage {
    /// The image turned upright per its EXIF orientation (1…8); orientation becomes 1.
    public func applyingOrientation() -> DecodedImage {
        guard orientation >= 2 && orientation <= 8 else { return self }
        let c = layout.channels
        let transposed = orientation >= 5
        let outW = transposed ? height : width
        let outH = transposed ? width : height
        var out = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<outH {
            for x in 0..<outW {
                // The source pixel that lands at (x, y) for each orientation.
                let (sx, sy): (Int, Int)
                switch orientation {
                case 2: (sx, sy) = (width - 1 - x, y)
                case 3: (sx, sy) = (width - 1 - x, height - 1 - y)
                case 4: (sx, sy) = (x, height - 1 - y)
                case 5: (sx, sy) = (y, x)
                case 6: (sx, sy) = (y, height - 1 - x)
                case 7: (sx, sy) = (width - 1 - y, height - 1 - x)
                default: (sx, sy) = (width - 1 - y, x)  // 8
                }
                let s = (sy * width + sx) * c
                let d = (y * outW + x) * c
                for k in 0..<c { out[d + k] = pixels[s + k] }
            }
        }
        return withPixels(out, width: outW, height: outH, orientation: 1)
    }
}
