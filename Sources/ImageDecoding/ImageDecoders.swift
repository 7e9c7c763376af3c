internal import CImageCodecs

/// Entry points: pick a decoder from the bytes' signature, decode a whole buffer (PNG encoding:
/// `ImageDecoders+SimplifiedPNG.swift`; whole PNGs: `ImageDecoders+PNG.swift`).
public enum ImageDecoders {
    /// An incremental decoder for `format`, or `.unsupported` naming it.
    public static func makeIncremental(for format: ImageFormat, options: DecodeOptions = DecodeOptions()) throws(DecodeError)
        -> any IncrementalImageDecoder
    {
        switch format {
        case .jpeg: return try JPEGDecoder(options: options)
        case .png: return try PNGDecoder(options: options)
        case .webp: return WebPDecoder(options: options)
        case .gif: return GIFDecoder(options: options)
        case .avif: return BufferedImageDecoder(format: .avif, options: options, decode: AVIFDecoder.decode)
        case .jxl: return try JXLDecoder(options: options)
        default: throw unsupported(format)
        }
    }

    /// The formats this worker decodes, as `ImageFormat` names them.
    public static let decodedFormats: [ImageFormat] = [.jpeg, .png, .webp, .gif, .avif, .jxl]

    /// An incremental decoder whose frame is at least `target` (of an image of `source` size) and
    /// as small as the format allows: JPEG at libjpeg's DCT scale (as the whole-buffer path
    /// chooses it), a non-interlaced PNG scaled row by row to `target` exactly, a still WebP
    /// scaled by libwebp while decoding; otherwise full size. The pixel limit is checked against
    /// `source` first, before anything is allocated.
    public static func makeIncremental(
        for format: ImageFormat, options: DecodeOptions, source: (width: Int, height: Int), target: (width: Int, height: Int)
    ) throws(DecodeError) -> any IncrementalImageDecoder {
        try checkPixelLimit(source, options)
        guard target.width < source.width || target.height < source.height else { return try makeIncremental(for: format, options: options) }
        switch format {
        case .jpeg:
            var scaled = options
            scaled.scaleDenominator = jpegScaleDenominator(source: source, target: target)
            return try JPEGDecoder(options: scaled)
        case .png:
            return try PNGDecoder(options: options, scaledTo: target)
        case .webp:
            return WebPDecoder(options: options, scaledTo: target)
        default:
            return try makeIncremental(for: format, options: options)
        }
    }

    /// libjpeg's DCT scale for a target: the smallest at or above it (output is ceil(size / d)).
    static func jpegScaleDenominator(source: (width: Int, height: Int), target: (width: Int, height: Int)) -> Int {
        [8, 4, 2, 1].first { d in
            (source.width + d - 1) / d >= target.width && (source.height + d - 1) / d >= target.height
        } ?? 1
    }

    /// Refuses an image whose header announces more than `options.maxPixels`: checked before any
    /// scaling decision or pixel buffer.
    public static func checkPixelLimit(_ size: (width: Int, height: Int), _ options: DecodeOptions) throws(DecodeError) {
        if UInt64(max(0, size.width)) * UInt64(max(0, size.height)) > options.maxPixels { throw tooLarge(size.width, size.height, options) }
    }

    static func tooLarge(_ width: Int, _ height: Int, _ options: DecodeOptions) -> DecodeError {
        .limit("image of \(width)x\(height) pixels exceeds the limit of \(options.maxPixels) pixels", width: width, height: height)
    }

    static func unsupported(_ format: ImageFormat) -> DecodeError {
        .unsupported(
            "\(format.rawValue.uppercased()) images are not decoded by this worker (\(decodedFormats.map { $0.rawValue.uppercased() }.joined(separator: ", ")) are)")
    }

    /// Decodes a complete buffer: JPEG with TurboJPEG (CMYK files through libjpeg), PNG with
    /// libpng's simplified API (the progressive reader gives the same pixels), WebP with libwebp,
    /// GIF with giflib, AVIF with libavif (animations: their first frame).
    /// Colours as `options.colorProfile` asks (`SRGBConversion`).
    public static func decode(_ data: [UInt8], options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> DecodedImage {
        var image = try decodeAsStored(data, options: options)
        // (AVIF's and JPEG XL's decoders read their colour information themselves.)
        if image.format != .avif && image.format != .jxl { image.manageColor(of: data, options.colorProfile) }
        return image
    }

    /// `decode`, its colours as stored (but a CMYK file's, which only exist as RGB through its profile).
    static func decodeAsStored(_ data: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        guard let format = ImageFormat.detect(data) else {
            throw data.isEmpty ? .corrupt("no image data") : .unsupported("unknown image format (no known signature)")
        }
        switch format {
        case .jpeg:
            return try decodeJPEG(data, options: options)
        case .png:
            return try recordingOrientation(decodePNG(data, options: options), of: data)
        case .webp:
            return try recordingOrientation(WebPDecoder.decode(data, options: options), of: data)
        case .gif:
            return try GIFDecoder.decode(data, options: options)
        case .avif:
            return try AVIFDecoder.decode(data, options: options)
        case .jxl:
            return try decodeIncrementally(data, format: .jxl, options: options)
        default:
            throw unsupported(format)
        }
    }

    /// The EXIF orientation (1…8) a whole file of `format` records, 1 when none: a JPEG's APP1
    /// segment, a PNG's `eXIf` chunk (before or after the image data), a WebP's `EXIF` chunk
    /// (after it, in the files that have one). AVIF's (`irot`, `imir`) is its decoder's, and JPEG XL's
    /// (its basic info) is read here too; GIF has none.
    public static func recordedOrientation(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) -> Int {
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        switch format {
        case .jpeg: return Int(iw_jpeg_scan_orientation(data, bytes.count))
        case .png: return Int(iw_png_scan_orientation(data, bytes.count))
        case .webp: return Int(iw_webp_scan_orientation(data, bytes.count))
        case .jxl: return JXLDecoder.probe(bytes).map(\.orientation) ?? 1
        default: return 1
        }
    }

    /// `image` decoded from `data`, with the orientation the file records.
    static func recordingOrientation(_ image: DecodedImage, of data: [UInt8]) -> DecodedImage {
        var image = image
        if image.orientation == 1 {
            image.orientation = data.withUnsafeBytes { recordedOrientation($0, format: image.format) }
        }
        return image
    }

    /// The stored size of an image from its header, without decoding it.
    public static func probeSize(_ data: [UInt8]) -> (width: Int, height: Int)? {
        switch ImageFormat.detect(data) {
        case .png?:
            guard data.count >= 24, data[12..<16].elementsEqual("IHDR".utf8) else { return nil }
            func be32(_ i: Int) -> Int { Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3]) }
            let (width, height) = (be32(16), be32(20))
            return width <= 0x7FFF_FFFF && height <= 0x7FFF_FFFF ? (width, height) : nil
        case .jpeg?:
            var w: UInt32 = 0
            var h: UInt32 = 0
            let ok = data.withUnsafeBufferPointer { iw_jpeg_probe($0.baseAddress, $0.count, &w, &h) } == 0
            return ok ? (Int(w), Int(h)) : nil
        case .gif?:
            // The canvas the first frame is shown on (the logical screen, enlarged to hold it).
            var w: UInt32 = 0
            var h: UInt32 = 0
            let ok = data.withUnsafeBufferPointer { iw_gif_canvas($0.baseAddress, $0.count, &w, &h, nil, nil) } == 0
            return ok ? (Int(w), Int(h)) : nil
        case .webp?:
            return ImageHeader.webp(data)
        case .avif?:
            return ImageHeader.isobmff(data)
        case .jxl?:
            return JXLDecoder.probe(data).map { ($0.width, $0.height) }
        default:
            return nil
        }
    }

    /// Decodes a whole buffer and scales it down to fit `maxPixelSize` (longest side) and
    /// `maxPixelCount`: JPEG with libjpeg's DCT scaling to the smallest scale at or above the
    /// target, then an area-weighted resample; PNG resampled row by row as rows are decoded (no
    /// full-size image), except interlaced files, whose rows come pass by pass; a still WebP
    /// scaled by libwebp while decoding; GIF, AVIF and animated WebP decoded, then resampled.
    public static func decode(
        _ data: [UInt8], options: DecodeOptions, maxPixelSize: Int?, maxPixelCount: Int?
    ) throws(DecodeError) -> DecodedImage {
        guard maxPixelSize != nil || maxPixelCount != nil else { return try decode(data, options: options) }
        return try decode(data, options: options) { w, h in
            ImageResampler.fittedSize(width: w, height: h, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
        }
    }

    /// Decodes a whole buffer at the size `target` gives for the stored size read from its
    /// header (never larger: a larger answer decodes at full size), by the same means as above.
    /// `target` may refuse the size, before any pixel buffer. With `resampling: false`, a JPEG
    /// (GIF, AVIF) is left at its DCT scale (at least `target`), for a caller that crops before
    /// it resamples.
    public static func decode(
        _ data: [UInt8], options: DecodeOptions, resampling: Bool = true,
        target: (_ width: Int, _ height: Int) throws(DecodeError) -> (width: Int, height: Int)
    ) throws(DecodeError) -> DecodedImage {
        guard let (w, h) = probeSize(data), w > 0, h > 0 else { return try decode(data, options: options) }
        try checkPixelLimit((w, h), options)
        let asked = try target(w, h)
        let target = (width: max(1, min(w, asked.width)), height: max(1, min(h, asked.height)))
        let format = ImageFormat.detect(data)
        if format == .png, (target.width, target.height) != (w, h),
            var image = try decodePNGRows(data, options: options, width: target.width, height: target.height)
        {
            image.manageColor(of: data, options.colorProfile)
            return recordingOrientation(image, of: data)
        }
        if format == .webp {
            // A still image scaled by libwebp while decoding; an animation's first frame resampled.
            var image = ImageResampler.resize(try WebPDecoder.decode(data, options: options, size: target), width: target.width, height: target.height)
            image.manageColor(of: data, options.colorProfile)
            return recordingOrientation(image, of: data)
        }
        var scaled = options
        if format == .jpeg {
            scaled.scaleDenominator = jpegScaleDenominator(source: (w, h), target: target)
        }
        let image = try decode(data, options: scaled)
        return resampling ? ImageResampler.resize(image, width: target.width, height: target.height) : image
    }

    /// TurboJPEG straight into the returned array: no second bitmap, no copy. Progressive files go
    /// through libjpeg instead (`iw_jpeg_decode_whole_into`): the same pixels, but a large file's
    /// coefficient buffer is given back as the bitmap fills, so the peak is about the bitmap alone.
    static func decodeJPEG(_ data: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        let layout = options.layout.cLayout
        let denominator = Int32(options.scaleDenominator)
        var header = iw_image()
        let status = data.withUnsafeBufferPointer { iw_tj_header($0.baseAddress, $0.count, layout, options.maxPixels, denominator, &header) }
        if status == 1 { return try decodeIncrementally(data, format: .jpeg, options: options) }  // CMYK and the like
        if status != 0 { throw error(header) }
        let count = Int(header.width) * Int(header.height) * Int(header.channels)
        var failure: DecodeError?
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var info = header
            let result = data.withUnsafeBufferPointer {
                iw_jpeg_has_progressive_frame($0.baseAddress, $0.count) != 0
                    ? iw_jpeg_decode_whole_into(
                        $0.baseAddress, $0.count, layout, denominator, Int32(clamping: options.maxScans), buffer.baseAddress, &info)
                    : iw_tj_decode_into($0.baseAddress, $0.count, layout, denominator, buffer.baseAddress, &info)
            }
            if result == 0 {
                initialized = count
            } else {
                failure = error(info)
                initialized = 0
            }
        }
        if let failure { throw failure }
        let orientation = data.withUnsafeBufferPointer { iw_jpeg_scan_orientation($0.baseAddress, $0.count) }
        return DecodedImage(
            width: Int(header.width), height: Int(header.height), layout: options.layout, pixels: pixels,
            orientation: Int(orientation), format: .jpeg)
    }

    static func decodeIncrementally(_ data: [UInt8], format: ImageFormat, options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        let decoder = try makeIncremental(for: format, options: options)
        _ = try decoder.feed(data, isLast: true)
        guard decoder.isComplete, let image = decoder.currentImage() else { throw .corrupt("no image decoded") }
        return image
    }

    /// A C string that the C side wrote into a buffer of ours.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The C string in a fixed-size `char` array of a C struct (imported as a tuple).
    static func text<Tuple>(inArray tuple: Tuple) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    static func error(_ image: iw_image, format: String = "JPEG") -> DecodeError {
        DecodeError(
            kind: Int(image.error_kind), message: text(inArray: image.error), width: Int(image.image_width),
            height: Int(image.image_height), format: format)
    }

    /// An array of `count` bytes written by a C call (0: done), or the error it reports.
    static func filled(_ count: Int, format: String, by fill: (UnsafeMutablePointer<UInt8>?, inout iw_image) -> Int32) throws(DecodeError)
        -> [UInt8]
    {
        var failure: DecodeError?
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var info = iw_image()
            if fill(buffer.baseAddress, &info) == 0 {
                initialized = count
            } else {
                failure = error(info, format: format)
                initialized = 0
            }
        }
        if let failure { throw failure }
        return pixels
    }
}
