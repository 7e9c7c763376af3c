internal import CImageCodecs

/// Incremental PNG decoding with libpng's progressive reader (`png_process_data`), all bit depths,
/// colour types, palettes with tRNS, 16-bit and Adam7 (a partial image per pass), with the
/// transforms of libpng's simplified API, so the pixels equal `png_image_finish_read`'s, except
/// for 16-bit interlaced files, whose passes are placed here (libpng 1.6.39 misplaces their rows
/// when it de-interlaces them after the 16-to-8-bit transforms, in both of its readers).
/// CRC errors in critical chunks are errors; libpng's user limits are set.
///
/// With `scaledTo`, a non-interlaced file is scaled down row by row as it is decoded (the same
/// pixels as decoding it whole and then `ImageResampler.resize`, without the full-size image):
/// its frame is then the scaled one, in the options' layout. Interlaced files are decoded at full
/// size either way (their rows come pass by pass).
public final class PNGDecoder: IncrementalImageDecoder {
    private let handle: OpaquePointer
    private let options: DecodeOptions
    private let target: (width: Int, height: Int)?
    private var resampler: RowResampler?
    private var failed = false
    public private(set) var isComplete = false
    /// The bytes before the image data, kept until an `eXIf` chunk there gives the orientation or
    /// the first IDAT shows there is none (at most `maxHeadBytes`: libpng is told to skip such
    /// chunks, and reads none of this).
    private var head: [UInt8]? = []
    public private(set) var orientation = 1
    static let maxHeadBytes = 1 << 20

    public var format: ImageFormat { .png }

    public init(options: DecodeOptions = DecodeOptions(), scaledTo target: (width: Int, height: Int)? = nil) throws(DecodeError) {
        guard let handle = iw_png_create(options.maxPixels) else { throw .outOfMemory("cannot create a PNG decoder") }
        self.handle = handle
        self.options = options
        self.target = target
        if target != nil {
            iw_png_stream_rows(handle, { context, row, _ in
                guard let context, let row else { return }
                Unmanaged<PNGDecoder>.fromOpaque(context).takeUnretainedValue().take(row)
            }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    /// One decoded RGBA row (streaming), into the resampler; called from inside `iw_png_feed`.
    private func take(_ row: UnsafePointer<UInt8>) {
        let width = Int(iw_png_width(handle))
        if resampler == nil, let target {
            let height = Int(iw_png_height(handle))
            resampler = RowResampler(
                inWidth: width, inHeight: height, outWidth: min(target.width, width), outHeight: min(target.height, height),
                channels: options.layout.channels)
        }
        resampler?.push(rgba: row)
    }

    deinit { iw_png_destroy(handle) }

    public func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        guard !failed else { throw error() }
        if head != nil { readHead(bytes) }
        let result = iw_png_feed(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, isLast ? 1 : 0)
        if result == IW_FAILED || iw_png_error_kind(handle) != IW_ERR_NONE {
            failed = true
            throw error()
        }
        let progress = DecodeProgress(rawValue: Int(result))
        if progress.contains(.complete) { isComplete = true }
        return progress
    }

    /// The orientation of an `eXIf` chunk before the image data, once its bytes are in.
    private func readHead(_ bytes: UnsafeRawBufferPointer) {
        head! += bytes
        var reachedImage: Int32 = 0
        let found = head!.withUnsafeBufferPointer { iw_png_scan_orientation_before_image($0.baseAddress, $0.count, &reachedImage) }
        if found != 1 || reachedImage != 0 || head!.count > Self.maxHeadBytes {
            orientation = Int(found)
            head = nil
        }
    }

    private func error() -> DecodeError {
        DecodeError(
            kind: Int(iw_png_error_kind(handle)), message: String(cString: iw_png_error(handle)),
            width: Int(iw_png_width(handle)), height: Int(iw_png_height(handle)), format: "PNG")
    }

    public var size: (width: Int, height: Int)? {
        if let resampler { return (resampler.outWidth, resampler.outHeight) }
        let w = Int(iw_png_width(handle))
        let h = Int(iw_png_height(handle))
        return w > 0 && h > 0 ? (w, h) : nil
    }

    public var filledRows: Int { resampler?.completedRows ?? Int(iw_png_rows(handle)) }
    public var completedPasses: Int { Int(iw_png_passes(handle)) }
    /// Ignored: rows and passes cost nothing more than their decoding.
    public var wantsPartialFrames = true

    public func currentImage() -> DecodedImage? {
        if let resampler {
            return DecodedImage(
                width: resampler.outWidth, height: resampler.outHeight, layout: options.layout, pixels: resampler.output,
                orientation: orientation, format: .png)
        }
        return withCurrentPixels { frame in
            DecodedImage(width: frame.width, height: frame.height, layout: .rgba, pixels: Array(frame.bytes), orientation: orientation, format: .png)
                .converted(to: options.layout)
        }
    }

    public func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R? {
        if let resampler {
            return try resampler.withOutput { pixels in
                try body(BorrowedPixels(width: resampler.outWidth, height: resampler.outHeight, layout: options.layout, bytes: pixels))
            }
        }
        guard let (w, h) = size, let pixels = iw_png_pixels(handle) else { return nil }
        return try body(BorrowedPixels(width: w, height: h, layout: .rgba, bytes: UnsafeBufferPointer(start: pixels, count: w * h * 4)))
    }
}
