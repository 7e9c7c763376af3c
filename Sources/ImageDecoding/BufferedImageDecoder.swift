/// An incremental decoder for files that have no partial images (AVIF): it keeps the bytes as
/// they arrive and decodes them whole, once, when the last has come. It reports `header` as soon as
/// the stored size can be read, and no pixels before the end.
public final class BufferedImageDecoder: IncrementalImageDecoder {
    public let format: ImageFormat
    private let options: DecodeOptions
    private let decodeWhole: ([UInt8], DecodeOptions) throws(DecodeError) -> DecodedImage
    private var data: [UInt8] = []
    private var headerSize: (width: Int, height: Int)?
    private var image: DecodedImage?
    private var failure: DecodeError?
    public private(set) var isComplete = false

    public init(
        format: ImageFormat, options: DecodeOptions, decode: @escaping ([UInt8], DecodeOptions) throws(DecodeError) -> DecodedImage
    ) {
        self.format = format
        self.options = options
        self.decodeWhole = decode
    }

    public func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        try DecodeError.final(&failure) { () throws(DecodeError) in try take(bytes, isLast: isLast) }
    }

    private func take(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        data += bytes
        var progress: DecodeProgress = []
        if headerSize == nil, let size = ImageDecoders.probeSize(data), size.width > 0, size.height > 0 {
            try ImageDecoders.checkPixelLimit(size, options)
            headerSize = size
            progress.insert(.header)
        }
        guard isLast else { return progress }
        image = try decodeWhole(data, options)
        data = []
        isComplete = true
        return progress.union([.pixels, .complete])
    }

    public var size: (width: Int, height: Int)? { image.map { ($0.width, $0.height) } ?? headerSize }
    public var filledRows: Int { image?.height ?? 0 }
    public var completedPasses: Int { 0 }
    /// Ignored: there are no partial frames.
    public var wantsPartialFrames = true
    public var orientation: Int { image?.orientation ?? 1 }

    public func currentImage() -> DecodedImage? { image }

    public func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R? {
        guard let image else { return nil }
        return try image.pixels.withUnsafeBufferPointer {
            try body(BorrowedPixels(width: image.width, height: image.height, layout: image.layout, bytes: $0))
        }
    }
}
