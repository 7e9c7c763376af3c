internal import CImageCodecs

/// libpng's simplified API: the reference decode the PNG decoder is tested against, and PNG
/// encoding (partial images, `png` output).
extension ImageDecoders {
    /// libpng's simplified API on a whole buffer, to RGBA: the reference the PNG decoder matches
    /// (but for 16-bit interlaced files, whose rows libpng 1.6.39 misplaces there).
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

    /// PNG bytes of an image (libpng's simplified write API); `fast` compresses less, for
    /// transient images such as partial ones.
    public static func encodePNG(_ image: DecodedImage, fast: Bool = false) throws(DecodeError) -> [UInt8] {
        let result: Result<[UInt8], DecodeError> = image.pixels.withUnsafeBufferPointer { pixels in
            do throws(DecodeError) {
                return .success(try encodePNG(BorrowedPixels(width: image.width, height: image.height, layout: image.layout, bytes: pixels), fast: fast))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// PNG bytes of pixels lent by a decoder (no copy of them first).
    public static func encodePNG(_ frame: BorrowedPixels, fast: Bool = false) throws(DecodeError) -> [UInt8] {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = message.withUnsafeMutableBufferPointer { text in
            iw_png_encode(
                frame.bytes.baseAddress, UInt32(frame.width), UInt32(frame.height), Int32(frame.layout.channels), frame.stride,
                fast ? 1 : 0, &bytes, &length, text.baseAddress)
        }
        guard status == 0, let bytes else {
            throw .outOfMemory("PNG encoding failed: " + text(message))
        }
        defer { iw_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}
