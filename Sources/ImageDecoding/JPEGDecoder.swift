internal import CImageCodecs

/// Incremental JPEG decoding with libjpeg-turbo's libjpeg API (a suspending source manager;
/// buffered-image mode for progressive files, with a frame per completed scan; rows from the top
/// for baseline files). Scaling uses libjpeg's DCT scaling; CMYK files are converted to RGB (through their ICC profile
/// when they have one and colours are managed; the other files' colours are `SRGBConversion`'s).
public final class JPEGDecoder: IncrementalImageDecoder {
    private let handle: OpaquePointer
    private let options: DecodeOptions
    private var failed = false
    public private(set) var isComplete = false

    public var format: ImageFormat { .jpeg }

    public init(options: DecodeOptions = DecodeOptions()) throws(DecodeError) {
        guard let handle = iw_jpeg_create(options.layout.cLayout, options.maxPixels, Int32(options.maxScans), Int32(options.scaleDenominator)) else {
            throw .outOfMemory("cannot create a JPEG decoder")
        }
        iw_jpeg_manage_color(handle, options.colorProfile == .srgb ? 1 : 0)
        self.handle = handle
        self.options = options
    }

    deinit { iw_jpeg_destroy(handle) }

    public func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        guard !failed else { throw error() }
        let result = iw_jpeg_feed(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, isLast ? 1 : 0)
        if result == IW_FAILED || iw_jpeg_error_kind(handle) != IW_ERR_NONE {
            failed = true
            throw error()
        }
        let progress = DecodeProgress(rawValue: Int(result))
        if progress.contains(.complete) {
            isComplete = true
            if iw_jpeg_width(handle) == 0 || iw_jpeg_height(handle) == 0 { throw DecodeError.corrupt("image has 0 pixels") }
        }
        return progress
    }

    private func error() -> DecodeError {
        DecodeError(
            kind: Int(iw_jpeg_error_kind(handle)), message: String(cString: iw_jpeg_error(handle)),
            width: Int(iw_jpeg_image_width(handle)), height: Int(iw_jpeg_image_height(handle)), format: "JPEG")
    }

    public var size: (width: Int, height: Int)? {
        let w = Int(iw_jpeg_width(handle))
        let h = Int(iw_jpeg_height(handle))
        return w > 0 && h > 0 ? (w, h) : nil
    }

    public var filledRows: Int { Int(iw_jpeg_rows(handle)) }
    public var completedPasses: Int { Int(iw_jpeg_scans(handle)) }
    public var orientation: Int { Int(iw_jpeg_orientation(handle)) }
    public var wantsPartialFrames = true {
        didSet { iw_jpeg_want_partial_frames(handle, wantsPartialFrames ? 1 : 0) }
    }

    /// A progressive file's preview: each 8x8 block's average (its DC coefficient), 1/8 of the
    /// stored size, colour from the block covering each pixel, made from the coefficients without an
    /// output pass (`iw_jpeg_preview`). Available for progressive YCbCr, RGB and grayscale files
    /// from the first scan until the image is complete (then its coefficients are gone; the final
    /// frame is decoded).
    public var previewSize: (width: Int, height: Int)? {
        var w: UInt32 = 0
        var h: UInt32 = 0
        guard iw_jpeg_preview_size(handle, &w, &h) == 0 else { return nil }
        return (Int(w), Int(h))
    }

    public func preview() -> (image: DecodedImage, passes: Int)? {
        guard let size = previewSize, let image = image(size, filledBy: { iw_jpeg_preview(handle, $0) }) else { return nil }
        return (image, Int(iw_jpeg_completed_scans(handle)))
    }

    /// An image of `size` in the options' layout, its pixels written by a C call (0: done), or nil.
    private func image(_ size: (width: Int, height: Int), filledBy fill: (UnsafeMutablePointer<UInt8>?) -> Int32) -> DecodedImage? {
        let count = size.width * size.height * options.layout.channels
        var ok = false
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            ok = fill(buffer.baseAddress) == 0
            initialized = ok ? count : 0
        }
        guard ok else { return nil }
        return DecodedImage(
            width: size.width, height: size.height, layout: options.layout, pixels: pixels, orientation: orientation, format: .jpeg)
    }

    /// A progressive file's final image, rendered by its last output pass straight into this array
    /// when first asked for (`iw_jpeg_final_into`: no frame buffer, no copy), then kept.
    private var final: DecodedImage?

    private func finalImage() -> DecodedImage? {
        if let final { return final }
        guard isComplete, iw_jpeg_final_pending(handle) != 0, let size else { return nil }
        final = image(size, filledBy: { iw_jpeg_final_into(handle, $0) })
        return final
    }

    public func currentImage() -> DecodedImage? {
        if let final = finalImage() { return final }
        return withCurrentPixels { frame in
            DecodedImage(width: frame.width, height: frame.height, layout: frame.layout, pixels: Array(frame.bytes), orientation: orientation, format: .jpeg)
        }
    }

    public func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R? {
        if let final = finalImage() {
            return try final.pixels.withUnsafeBufferPointer {
                try body(BorrowedPixels(width: final.width, height: final.height, layout: final.layout, bytes: $0))
            }
        }
        guard let (w, h) = size, filledRows > 0, let pixels = iw_jpeg_pixels(handle) else { return nil }
        let count = w * h * options.layout.channels
        return try body(BorrowedPixels(width: w, height: h, layout: options.layout, bytes: UnsafeBufferPointer(start: pixels, count: count)))
    }
}
