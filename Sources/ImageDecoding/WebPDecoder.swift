internal import CImageCodecs

/// WebP (lossy, lossless, with alpha) with libwebp. Still images decode incrementally through
/// `WebPIDecoder`, each byte once, with rows from the top as they arrive, scaled while decoding by
/// libwebp's rescaler when a smaller size is asked (`scaledTo`). An animated file's first frame is
/// its image (composited on a transparent canvas): its frames are not incremental, so it is
/// decoded once all its bytes are in, and counted (`DecodedImage.animation`).
public final class WebPDecoder: IncrementalImageDecoder {
    private let options: DecodeOptions
    private let target: (width: Int, height: Int)?
    /// Bytes held until the header is known, and all the bytes of an animated file.
    private var pending: [UInt8] = []
    private var header: iw_webp_info?
    private var handle: OpaquePointer?
    private var pixels: UnsafeMutableBufferPointer<UInt8>?
    private var frameSize: (width: Int, height: Int)?
    private var animated: DecodedImage?
    private var failure: DecodeError?
    public private(set) var isComplete = false

    public var format: ImageFormat { .webp }

    /// The decoder's own layout: RGBA, or RGB for RGB and grey output (libwebp writes no grey).
    private var channels: Int { options.layout == .rgba ? 4 : 3 }
    private var ownLayout: PixelLayout { options.layout == .rgba ? .rgba : .rgb }

    public init(options: DecodeOptions = DecodeOptions(), scaledTo target: (width: Int, height: Int)? = nil) {
        self.options = options
        self.target = target
    }

    deinit {
        if let handle { iw_webp_inc_destroy(handle) }
        pixels?.deallocate()
    }

    public func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        try DecodeError.final(&failure) { () throws(DecodeError) in try take(bytes, isLast: isLast) }
    }

    private func take(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        var progress: DecodeProgress = []
        var input = bytes
        if header == nil {
            pending += bytes
            var info = iw_webp_info()
            var image = iw_image()
            let status = pending.withUnsafeBufferPointer {
                iw_webp_header($0.baseAddress, $0.count, isLast ? 1 : 0, options.maxPixels, UInt32(clamping: options.maxFrames), &info, &image)
            }
            if status == 1 { return [] }
            guard status == 0 else { throw ImageDecoders.error(image, format: "WebP") }
            header = info
            progress.insert(.header)
            if info.animated == 0 {
                try start(width: Int(info.width), height: Int(info.height))
                input = UnsafeRawBufferPointer(start: nil, count: 0)
                let appended: Result<DecodeProgress, DecodeError> = pending.withUnsafeBytes { raw in
                    do throws(DecodeError) { return .success(try append(raw)) } catch { return .failure(error) }
                }
                pending = []
                progress.formUnion(try appended.get())
            }
        } else if header?.animated != 0 {
            pending += bytes
        }
        if let header, header.animated == 0, input.count > 0 {
            progress.formUnion(try append(input))
        }
        if isLast && !isComplete {
            guard let header else { throw .truncated("the data ends before the WebP header does") }
            guard header.animated != 0 else { throw .truncated("the data ends before the image does") }
            animated = try WebPDecoder.decode(pending, options: options)
            pending = []
            isComplete = true
            progress.formUnion([.pixels, .complete])
        }
        return progress
    }

    /// Allocates the frame (zeroed: rows not decoded yet are transparent black) and the decoder.
    private func start(width: Int, height: Int) throws(DecodeError) {
        let size = target.map { (min($0.width, width), min($0.height, height)) } ?? (width, height)
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: size.0 * size.1 * channels)
        buffer.initialize(repeating: 0)
        guard let handle = iw_webp_inc_create(Int32(channels), UInt32(size.0), UInt32(size.1), buffer.baseAddress) else {
            buffer.deallocate()
            throw .outOfMemory("cannot create a WebP decoder")
        }
        (self.handle, pixels, frameSize) = (handle, buffer, size)
    }

    private func append(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> DecodeProgress {
        guard let handle else { return [] }
        let before = iw_webp_inc_rows(handle)
        let status = iw_webp_inc_append(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        if status == IW_FAILED {
            throw DecodeError(
                kind: Int(iw_webp_inc_error_kind(handle)), message: String(cString: iw_webp_inc_error(handle)),
                width: Int(header?.width ?? 0), height: Int(header?.height ?? 0), format: "WebP")
        }
        var progress: DecodeProgress = iw_webp_inc_rows(handle) > before ? .pixels : []
        if status == 1 {
            isComplete = true
            progress.formUnion([.pixels, .complete])
        }
        return progress
    }

    public var size: (width: Int, height: Int)? {
        if let animated { return (animated.width, animated.height) }
        if let frameSize { return frameSize }
        guard let header, header.animated != 0 else { return nil }
        return (Int(header.width), Int(header.height))
    }

    public var filledRows: Int {
        if let animated { return animated.height }
        guard let handle else { return 0 }
        return Int(iw_webp_inc_rows(handle))
    }

    public var completedPasses: Int { 0 }
    /// Ignored: rows land in the frame as they are decoded.
    public var wantsPartialFrames = true
    public var orientation: Int { 1 }
    /// Whether the file is an animation (known once its header is in).
    public var isAnimated: Bool { header.map { $0.animated != 0 } ?? false }

    public func currentImage() -> DecodedImage? {
        if let animated { return animated }
        return withCurrentPixels { frame in
            DecodedImage(width: frame.width, height: frame.height, layout: frame.layout, pixels: Array(frame.bytes), format: .webp)
                .converted(to: options.layout)
        }
    }

    public func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R? {
        if let animated {
            return try animated.pixels.withUnsafeBufferPointer {
                try body(BorrowedPixels(width: animated.width, height: animated.height, layout: animated.layout, bytes: $0))
            }
        }
        guard let pixels, let (width, height) = frameSize, filledRows > 0 else { return nil }
        return try body(BorrowedPixels(width: width, height: height, layout: ownLayout, bytes: UnsafeBufferPointer(pixels)))
    }

    /// A whole WebP file in the options' layout: a still image at `size` (its own, or smaller,
    /// scaled by libwebp while decoding), an animation's first frame at the canvas's size.
    public static func decode(_ data: [UInt8], options: DecodeOptions, size: (width: Int, height: Int)? = nil) throws(DecodeError)
        -> DecodedImage
    {
        var info = iw_webp_info()
        var image = iw_image()
        let status = data.withUnsafeBufferPointer {
            iw_webp_header($0.baseAddress, $0.count, 1, options.maxPixels, UInt32(clamping: options.maxFrames), &info, &image)
        }
        guard status == 0 else { throw ImageDecoders.error(image, format: "WebP") }
        let (width, height) = (Int(info.width), Int(info.height))
        if info.animated != 0 {
            let pixels = try ImageDecoders.filled(width * height * 4, format: "WebP") { buffer, result in
                data.withUnsafeBufferPointer { iw_webp_first_frame_into($0.baseAddress, $0.count, buffer, &result) }
            }
            return DecodedImage(
                width: width, height: height, layout: .rgba, pixels: pixels, format: .webp,
                animation: Animation.of(frames: Int(info.frame_count), loops: Int(info.loop_count))
            ).converted(to: options.layout)
        }
        let out = size.map { (min($0.width, width), min($0.height, height)) } ?? (width, height)
        let channels = options.layout == .rgba ? 4 : 3
        let pixels = try ImageDecoders.filled(out.0 * out.1 * channels, format: "WebP") { buffer, result in
            data.withUnsafeBufferPointer {
                iw_webp_decode_into($0.baseAddress, $0.count, Int32(channels), UInt32(out.0), UInt32(out.1), buffer, &result)
            }
        }
        return DecodedImage(width: out.0, height: out.1, layout: channels == 4 ? .rgba : .rgb, pixels: pixels, format: .webp)
            .converted(to: options.layout)
    }
}
