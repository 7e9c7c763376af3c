internal import CImageCodecs

/// JPEG XL with libjxl (`iw_jxl.c`): the first frame (an animation's too), incrementally, each
/// byte once. Its size and orientation come from the basic info before any pixel buffer (the
/// pixel limit is checked there); partial images come as progressive passes arrive, and for a
/// sequential file as its groups do (the whole frame, the rest still zero). The pixels are as
/// stored, `orientation` saying how to turn them, as a JPEG's EXIF does. Colours: a lossy (XYB)
/// file is rendered in sRGB by libjxl; a file kept in its original space is converted through its
/// ICC profile like the other formats (`SRGBConversion`), or reported with `keep`.
public final class JXLDecoder: IncrementalImageDecoder {
    private let handle: OpaquePointer
    private let options: DecodeOptions
    private var failure: DecodeError?
    public private(set) var isComplete = false

    public var format: ImageFormat { .jxl }

    public init(options: DecodeOptions = DecodeOptions()) throws(DecodeError) {
        guard let handle = iw_jxl_create(options.layout.cLayout, options.maxPixels, options.colorProfile == .srgb ? 1 : 0) else {
            throw .outOfMemory("cannot create a JPEG XL decoder")
        }
        (self.handle, self.options) = (handle, options)
    }

    deinit { iw_jxl_destroy(handle) }

    public func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        try DecodeError.final(&failure) { () throws(DecodeError) -> DecodeProgress in
            let result = iw_jxl_feed(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, isLast ? 1 : 0)
            if result == IW_FAILED {
                throw DecodeError(
                    kind: Int(iw_jxl_error_kind(handle)), message: String(cString: iw_jxl_error(handle)),
                    width: Int(iw_jxl_width(handle)), height: Int(iw_jxl_height(handle)), format: "JPEG XL")
            }
            let progress = DecodeProgress(rawValue: Int(result))
            if progress.contains(.complete) { isComplete = true }
            return progress
        }
    }

    public var size: (width: Int, height: Int)? {
        let (w, h) = (Int(iw_jxl_width(handle)), Int(iw_jxl_height(handle)))
        return w > 0 && h > 0 ? (w, h) : nil
    }

    public var filledRows: Int { iw_jxl_pixels(handle) == nil ? 0 : Int(iw_jxl_height(handle)) }
    public var completedPasses: Int { Int(iw_jxl_passes(handle)) }
    public var wantsPartialFrames = true {
        didSet { iw_jxl_want_partial_frames(handle, wantsPartialFrames ? 1 : 0) }
    }
    public var orientation: Int { Int(iw_jxl_orientation(handle)) }

    /// The ICC profile of the pixels' colour space when they are not sRGB already (a file kept in
    /// its original space), or with `keep`.
    var colorProfile: ColorProfile {
        var length = 0
        guard let icc = iw_jxl_icc(handle, &length), length > 0 else { return ColorProfile() }
        return ColorProfile(icc: Array(UnsafeBufferPointer(start: icc, count: length)))
    }

    public func currentImage() -> DecodedImage? {
        withCurrentPixels { frame in
            var image = DecodedImage(
                width: frame.width, height: frame.height, layout: frame.layout, pixels: Array(frame.bytes), orientation: orientation,
                format: .jxl)
            if iw_jxl_animated(handle) != 0 { image.animation = Animation(frameCount: 2, loopCount: nil) }
            // Before any conversion to gray: its luma is the sRGB values'.
            image.manageColor(colorProfile, options.colorProfile)
            return image.converted(to: options.layout)
        }
    }

    public func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R? {
        guard let pixels = iw_jxl_pixels(handle), let (width, height) = size else { return nil }
        let layout: PixelLayout = iw_jxl_channels(handle) == 4 ? .rgba : .rgb
        return try body(BorrowedPixels(width: width, height: height, layout: layout, bytes: UnsafeBufferPointer(start: pixels, count: width * height * layout.channels)))
    }

    /// A JPEG XL file's size and orientation from its first bytes (nil before they hold its
    /// basic info).
    static func probe(_ bytes: [UInt8]) -> (width: Int, height: Int, orientation: Int)? {
        bytes.withUnsafeBytes { probe($0) }
    }

    static func probe(_ bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int, orientation: Int)? {
        var (w, h, o): (UInt32, UInt32, Int32) = (0, 0, 1)
        guard iw_jxl_probe(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &w, &h, &o) == 0 else { return nil }
        return (Int(w), Int(h), Int(o))
    }
}
