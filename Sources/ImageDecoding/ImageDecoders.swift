import CImageCodecs

/// Entry points: pick a decoder from the bytes' signature, decode a whole buffer, encode PNG.
public enum ImageDecoders {
    /// An incremental decoder for `format`, or `.unsupported` naming it.
    public static func makeIncremental(for format: ImageFormat, options: DecodeOptions = DecodeOptions()) throws(DecodeError)
        -> any IncrementalImageDecoder
    {
        switch format {
        case .jpeg: return try JPEGDecoder(options: options)
        case .png: return try PNGDecoder(options: options)
        default: throw unsupported(format)
        }
    }

    static func unsupported(_ format: ImageFormat) -> DecodeError {
        .unsupported("\(format.rawValue.uppercased()) images are not decoded by this worker (JPEG and PNG are)")
    }

    /// Decodes a complete buffer: JPEG with TurboJPEG (CMYK files through libjpeg), PNG with the
    /// progressive reader fed once (the same pixels as libpng's simplified API).
    public static func decode(_ data: [UInt8], options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> DecodedImage {
        guard let format = ImageFormat.detect(data) else {
            throw data.isEmpty ? .corrupt("no image data") : .unsupported("unknown image format (no known signature)")
        }
        switch format {
        case .jpeg:
            let result: Result<DecodedImage?, DecodeError> = data.withUnsafeBufferPointer { buffer in
                var image = iw_image()
                let layout: iw_layout = options.layout == .rgba ? IW_RGBA : options.layout == .rgb ? IW_RGB : IW_GRAY
                let status = iw_tj_decode(buffer.baseAddress, buffer.count, layout, options.maxPixels, Int32(options.scaleDenominator), &image)
                if status == 1 { return .success(nil) }  // CMYK: the libjpeg path
                if status != 0 { return .failure(error(image)) }
                defer { iw_free(image.pixels) }
                let count = Int(image.width) * Int(image.height) * Int(image.channels)
                return .success(
                    DecodedImage(
                        width: Int(image.width), height: Int(image.height), layout: options.layout,
                        pixels: Array(UnsafeBufferPointer(start: image.pixels, count: count)),
                        orientation: Int(iw_jpeg_scan_orientation(buffer.baseAddress, buffer.count)), format: .jpeg))
            }
            if let image = try result.get() { return image }
            return try decodeIncrementally(data, format: .jpeg, options: options)
        case .png:
            return try decodeIncrementally(data, format: .png, options: options)
        default:
            throw unsupported(format)
        }
    }

    static func decodeIncrementally(_ data: [UInt8], format: ImageFormat, options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        let decoder = try makeIncremental(for: format, options: options)
        _ = try decoder.feed(data, isLast: true)
        guard decoder.isComplete, let image = decoder.currentImage() else { throw .corrupt("no image decoded") }
        return image
    }

    static func error(_ image: iw_image) -> DecodeError {
        var copy = image
        let message = withUnsafeBytes(of: &copy.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch Int(image.error_kind) {
        case Int(IW_ERR_UNSUPPORTED): return .unsupported("unsupported JPEG: \(message)")
        case Int(IW_ERR_LIMIT): return .limit(message, width: Int(image.image_width), height: Int(image.image_height))
        case Int(IW_ERR_TRUNCATED): return .truncated(message)
        case Int(IW_ERR_MEMORY): return .outOfMemory(message)
        default: return .corrupt(message)
        }
    }

    /// libpng's simplified API on a whole buffer, to RGBA: the reference the PNG decoder matches.
    public static func decodePNGWithSimplifiedAPI(_ data: [UInt8], maxPixels: UInt64 = 0) throws(DecodeError) -> DecodedImage {
        let result: Result<DecodedImage, DecodeError> = data.withUnsafeBufferPointer { buffer in
            var image = iw_image()
            guard iw_png_decode_simplified(buffer.baseAddress, buffer.count, maxPixels, &image) == 0 else { return .failure(error(image)) }
            defer { iw_free(image.pixels) }
            let count = Int(image.width) * Int(image.height) * 4
            return .success(
                DecodedImage(
                    width: Int(image.width), height: Int(image.height), layout: .rgba,
                    pixels: Array(UnsafeBufferPointer(start: image.pixels, count: count)), format: .png))
        }
        return try result.get()
    }

    /// PNG bytes of an image (libpng's simplified write API).
    public static func encodePNG(_ image: DecodedImage) throws(DecodeError) -> [UInt8] {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = image.pixels.withUnsafeBufferPointer { pixels in
            message.withUnsafeMutableBufferPointer { text in
                iw_png_encode(
                    pixels.baseAddress, UInt32(image.width), UInt32(image.height), Int32(image.layout.channels), image.stride,
                    &bytes, &length, text.baseAddress)
            }
        }
        guard status == 0, let bytes else {
            throw .outOfMemory("PNG encoding failed: " + String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { iw_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}
