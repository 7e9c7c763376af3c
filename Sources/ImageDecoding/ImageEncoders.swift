internal import CImageCodecs

/// How JPEG stores colour: the chroma planes at half the width and height (4:2:0, the usual
/// setting for photos and thumbnails), half the width (4:2:2), or full size (4:4:4).
public enum ChromaSubsampling: String, Sendable, CaseIterable {
    case s420 = "4:2:0"
    case s422 = "4:2:2"
    case s444 = "4:4:4"

    var code: Int32 {
        switch self {
        case .s420: return 420
        case .s422: return 422
        case .s444: return 444
        }
    }
}

/// A file format to encode decoded pixels in, with its settings.
public enum ImageEncoding: Sendable, Equatable, Hashable {
    /// PNG with the fast settings (the Up filter, `iw_deflate`'s Huffman coding with runs); RGB
    /// when every pixel is opaque.
    case png
    /// JPEG with TurboJPEG: `quality` 1–100; alpha is dropped (JPEG has none).
    case jpeg(quality: Int, subsampling: ChromaSubsampling)
    /// WebP with libwebp: lossy at `quality` 0–100, or lossless (then `quality` is the effort);
    /// no alpha channel when every pixel is opaque.
    case webp(quality: Int, lossless: Bool)
    /// GIF with giflib: each frame's own palette of 255 colours at most (median cut), pixels less
    /// than half opaque transparent.
    case gif

    public var format: ImageFormat {
        switch self {
        case .png: return .png
        case .jpeg: return .jpeg
        case .webp: return .webp
        case .gif: return .gif
        }
    }

    /// Whether the format holds an animation (WebP and GIF).
    public var animates: Bool {
        switch self {
        case .webp, .gif: return true
        case .png, .jpeg: return false
        }
    }
}

/// Encoders for decoded pixels: PNG (`ImageDecoders.encodePNG`), JPEG and WebP.
public enum ImageEncoders {
    /// The file bytes of pixels lent by a decoder (no copy of them first).
    public static func encode(_ frame: BorrowedPixels, as encoding: ImageEncoding) throws(DecodeError) -> [UInt8] {
        switch encoding {
        case .png:
            return try ImageDecoders.encodePNG(frame, fast: true)
        case .jpeg(let quality, let subsampling):
            return try encoded("JPEG") { bytes, length, error in
                iw_jpeg_encode(
                    frame.bytes.baseAddress, UInt32(frame.width), UInt32(frame.height), Int32(frame.layout.channels), frame.stride,
                    Int32(quality), subsampling.code, &bytes, &length, error)
            }
        case .webp(let quality, let lossless):
            return try encoded("WebP") { bytes, length, error in
                iw_webp_encode(
                    frame.bytes.baseAddress, UInt32(frame.width), UInt32(frame.height), Int32(frame.layout.channels), frame.stride,
                    Int32(quality), lossless ? 1 : 0, &bytes, &length, error)
            }
        case .gif:
            return try encoded("GIF") { bytes, length, error in
                var frames: [UnsafePointer<UInt8>?] = [frame.bytes.baseAddress]
                var delays: [UInt32] = [0]
                return iw_gif_encode(
                    &frames, 1, &delays, UInt32(frame.width), UInt32(frame.height), Int32(frame.layout.channels), -1, &bytes, &length, error)
            }
        }
    }

    /// An image's frames as one file: an animated WebP (libwebp's animation encoder) or a GIF,
    /// each frame shown for its delay, looping as the source did (nil: once). A still image, or
    /// another format, is `encode`d as it is.
    public static func encodeFrames(_ image: DecodedImage, as encoding: ImageEncoding) throws(DecodeError) -> [UInt8] {
        guard let animation = image.animation, !animation.laterFrames.isEmpty, encoding.animates else { return try encode(image, as: encoding) }
        // (A frame without a delay of its own is shown 0 ms; -1: play once.)
        let delays = (0..<image.frameCount).map { UInt32(clamping: $0 < animation.delaysMs.count ? animation.delaysMs[$0] : 0) }
        let loops = Int32(clamping: animation.loopCount ?? -1)
        let file = try withFramePointers(image) { frames throws(DecodeError) in
            var delaysMs = delays
            let (count, width, height, channels) = (UInt32(image.frameCount), UInt32(image.width), UInt32(image.height), Int32(image.layout.channels))
            switch encoding {
            case .webp(let quality, let lossless):
                return try encoded("WebP") { bytes, length, error in
                    iw_webp_encode_animation(
                        frames, count, &delaysMs, width, height, channels, Int32(quality), lossless ? 1 : 0, loops, &bytes, &length, error)
                }
            default:
                return try encoded("GIF") { bytes, length, error in
                    iw_gif_encode(frames, count, &delaysMs, width, height, channels, loops, &bytes, &length, error)
                }
            }
        }
        guard let icc = image.iccProfile else { return file }
        return ICCEmbedding.embedding(icc, in: file, format: encoding.format)
    }

    /// `body` with a pointer to each of the image's frames' pixels (in one array: a stable
    /// address for each while C reads them).
    private static func withFramePointers<R>(
        _ image: DecodedImage, _ body: (UnsafePointer<UnsafePointer<UInt8>?>) throws(DecodeError) -> R
    ) throws(DecodeError) -> R {
        let joined = image.joinedFramePixels
        let size = image.pixels.count
        let result: Result<R, DecodeError> = joined.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return .failure(.corrupt("an image of 0 pixels")) }
            let pointers = (0..<image.frameCount).map { index in UnsafePointer<UInt8>?(base + index * size) }
            return pointers.withUnsafeBufferPointer { buffer in
                do throws(DecodeError) { return .success(try body(buffer.baseAddress!)) } catch { return .failure(error) }
            }
        }
        return try result.get()
    }

    /// An image's file bytes; its ICC profile (`iccProfile`, colours kept as stored) embedded.
    public static func encode(_ image: DecodedImage, as encoding: ImageEncoding) throws(DecodeError) -> [UInt8] {
        let file = try encodePixels(image, as: encoding)
        guard let icc = image.iccProfile else { return file }
        return ICCEmbedding.embedding(icc, in: file, format: encoding.format)
    }

    private static func encodePixels(_ image: DecodedImage, as encoding: ImageEncoding) throws(DecodeError) -> [UInt8] {
        let result: Result<[UInt8], DecodeError> = image.pixels.withUnsafeBufferPointer { pixels in
            do throws(DecodeError) {
                return .success(
                    try encode(BorrowedPixels(width: image.width, height: image.height, layout: image.layout, bytes: pixels), as: encoding))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The bytes a C encoder returned (malloc'd, freed here), or its message as an error.
    private static func encoded(
        _ name: String, _ call: (inout UnsafeMutablePointer<UInt8>?, inout Int, UnsafeMutablePointer<CChar>?) -> Int32
    ) throws(DecodeError) -> [UInt8] {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = message.withUnsafeMutableBufferPointer { call(&bytes, &length, $0.baseAddress) }
        guard status == 0, let bytes else { throw .outOfMemory("\(name) encoding failed: " + ImageDecoders.text(message)) }
        defer { iw_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}
