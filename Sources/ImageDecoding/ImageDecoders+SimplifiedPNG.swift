internal import CImageCodecs

/// PNG encoding with libpng's simplified write API (partial images, `png` output).
extension ImageDecoders {
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
