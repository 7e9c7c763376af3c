internal import CImageCodecs

/// Whole PNGs: libpng's simplified API into the returned array, the rows of a non-interlaced file
/// resampled as they are read, and the chunk check before libpng reads from memory.
extension ImageDecoders {
    /// libpng's simplified API (the reference the progressive reader matches, and faster on a whole
    /// buffer), straight into the returned array.
    static func decodePNG(_ data: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        let mayHaveAlpha = try checkPNGChunks(data)
        // 16-bit interlaced: libpng 1.6.39's simplified API misplaces their rows (`PNGDecoder`
        // reads their passes itself).
        if data.count > 28, data[24] == 16, data[28] == 1 { return try decodeIncrementally(data, format: .png, options: options) }
        guard let (width, height) = probeSize(data), width > 0, height > 0 else {
            return try decodeIncrementally(data, format: .png, options: options)  // libpng says what is wrong
        }
        try checkPixelLimit((width, height), options)
        // Exactly what the simplified API will write: RGB for an opaque file asked as RGB.
        let capacity = width * height * (options.layout == .rgb && !mayHaveAlpha ? 3 : 4)
        var failure: DecodeError?
        var channels = 4
        let pixels = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var info = iw_image()
            let status = data.withUnsafeBufferPointer {
                iw_png_decode_simplified_into(
                    $0.baseAddress, $0.count, options.layout == .rgb ? 1 : 0, buffer.baseAddress, capacity, &info)
            }
            if status == 0 {
                channels = Int(info.channels)
                initialized = width * height * channels
            } else {
                failure = error(info)
                initialized = 0
            }
        }
        if let failure { throw failure }
        let layout: PixelLayout = channels == 3 ? .rgb : .rgba
        return DecodedImage(width: width, height: height, layout: layout, pixels: pixels, format: .png).converted(to: options.layout)
    }

    /// A non-interlaced PNG scaled to `width` x `height` while its rows are read: the same pixels
    /// as `decodePNG` then `ImageResampler.resize`, without the full-size image. Nil for an
    /// interlaced file.
    static func decodePNGRows(_ data: [UInt8], options: DecodeOptions, width: Int, height: Int) throws(DecodeError) -> DecodedImage? {
        func failure(_ kind: Int32, _ text: String) -> DecodeError {
            let (w, h) = probeSize(data) ?? (0, 0)
            return DecodeError(kind: Int(kind), message: text, width: w, height: h, format: "PNG")
        }
        try checkPNGChunks(data)
        // The reader reads from `data` in place: everything happens inside this closure.
        let result = data.withUnsafeBufferPointer { bytes -> Result<DecodedImage?, DecodeError> in
            var kind: Int32 = 0
            var message = [CChar](repeating: 0, count: 256)
            let reader = message.withUnsafeMutableBufferPointer {
                iw_png_reader_open(bytes.baseAddress, bytes.count, options.maxPixels, &kind, $0.baseAddress)
            }
            guard let reader else {
                if kind == 0 { return .success(nil) }
                return .failure(failure(kind, text(message)))
            }
            defer { iw_png_reader_close(reader) }
            let inWidth = Int(iw_png_reader_width(reader))
            let inHeight = Int(iw_png_reader_height(reader))
            let layout = options.layout
            let resampler = RowResampler(
                inWidth: inWidth, inHeight: inHeight, outWidth: width, outHeight: height, channels: layout.channels)
            var row = [UInt8](repeating: 0, count: inWidth * 4)
            for _ in 0..<inHeight {
                guard row.withUnsafeMutableBufferPointer({ iw_png_reader_next(reader, $0.baseAddress) }) == 0 else {
                    return .failure(failure(iw_png_reader_error_kind(reader), String(cString: iw_png_reader_error(reader))))
                }
                row.withUnsafeBufferPointer { resampler.push(rgba: $0.baseAddress!) }
            }
            return .success(DecodedImage(width: width, height: height, layout: layout, pixels: resampler.output, format: .png))
        }
        return try result.get()
    }

    /// A whole PNG's chunks lie inside the buffer, up to IEND (`iw_png_check_chunks`): checked
    /// before libpng reads from memory, which has no limit of its own on what a chunk claims.
    /// Returns whether the file may have alpha (an alpha channel, or tRNS before its image data).
    @discardableResult
    static func checkPNGChunks(_ data: [UInt8]) throws(DecodeError) -> Bool {
        var message = [CChar](repeating: 0, count: 256)
        var mayHaveAlpha: Int32 = 1
        let kind = message.withUnsafeMutableBufferPointer { text in
            data.withUnsafeBufferPointer { iw_png_check_chunks($0.baseAddress, $0.count, &mayHaveAlpha, text.baseAddress) }
        }
        guard kind == IW_ERR_NONE else {
            let (w, h) = probeSize(data) ?? (0, 0)
            throw DecodeError(kind: Int(kind), message: text(message), width: w, height: h, format: "PNG")
        }
        return mayHaveAlpha != 0
    }
}
