/// What one `feed` brought about.
public struct DecodeProgress: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The size is known (reported once).
    public static let header = DecodeProgress(rawValue: 1)
    /// More of the image is there: rows, or a completed progressive scan or Adam7 pass.
    public static let pixels = DecodeProgress(rawValue: 2)
    /// The whole image is decoded.
    public static let complete = DecodeProgress(rawValue: 4)
    /// A progressive JPEG scan completed, whether or not the frame shows it (`wantsPartialFrames`).
    public static let scan = DecodeProgress(rawValue: 8)
}

/// The decoder's current frame, borrowed: valid only inside `withCurrentPixels`, and only until
/// the next `feed`. Rows top to bottom, `stride` bytes apart.
public struct BorrowedPixels {
    public let width: Int
    public let height: Int
    public let layout: PixelLayout
    public let bytes: UnsafeBufferPointer<UInt8>
    public var stride: Int { width * layout.channels }
}

/// Decodes an image from bytes fed as they arrive, each byte once. Not thread-safe: one owner
/// feeds it; the pixels read back with `currentImage()` are a copy, those lent to
/// `withCurrentPixels` are not.
public protocol IncrementalImageDecoder: AnyObject {
    var format: ImageFormat { get }
    /// Feeds more bytes; `isLast` says no more will come. A failure is final; the pixels decoded
    /// before it stay readable (a truncated file keeps its last partial image).
    func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress
    /// Output size, once the header is in.
    var size: (width: Int, height: Int)? { get }
    /// Rows from the top holding decoded pixels (the full height once a progressive scan or an
    /// Adam7 pass is in).
    var filledRows: Int { get }
    /// Completed progressive JPEG scans or PNG Adam7 passes that the current frame shows; 0 for
    /// sequential images.
    var completedPasses: Int { get }
    var isComplete: Bool { get }
    /// Whether partial frames are wanted from the next `feed` on (default true). A progressive
    /// JPEG's frame costs an output pass over the whole image; while false, its completed scans are
    /// absorbed without one, and the next wanted frame shows them all. PNG rows and passes land in
    /// the frame as they are decoded, at no extra cost, so the PNG decoder ignores it. The final
    /// image is decoded either way.
    var wantsPartialFrames: Bool { get set }
    /// EXIF orientation found so far (1 when none).
    var orientation: Int { get }
    /// The pixels as they are now, in the requested layout; nil before any pixel.
    func currentImage() -> DecodedImage?
    /// The pixels as they are now, without a copy, in the decoder's own layout (`layout` of the
    /// options for JPEG; RGBA for PNG); nil before any pixel.
    func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R?
    /// The size of `preview()`'s image, when this decoder can make one (known after its first
    /// `feed`); nil otherwise.
    var previewSize: (width: Int, height: Int)? { get }
    /// A small image of what has been decoded so far, made without a partial frame, in the
    /// requested layout with the number of passes it shows; nil when there is none. A progressive
    /// JPEG's is an eighth of the stored size, from its coefficients (`JPEGDecoder`).
    func preview() -> (image: DecodedImage, passes: Int)?
}

extension IncrementalImageDecoder {
    public var previewSize: (width: Int, height: Int)? { nil }
    public func preview() -> (image: DecodedImage, passes: Int)? { nil }
}

extension IncrementalImageDecoder {
    public func feed(_ bytes: [UInt8], isLast: Bool) throws(DecodeError) -> DecodeProgress {
        let result: Result<DecodeProgress, DecodeError> = bytes.withUnsafeBytes { raw in
            do throws(DecodeError) { return .success(try feed(raw, isLast: isLast)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
