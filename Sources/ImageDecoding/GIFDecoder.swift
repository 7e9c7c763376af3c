internal import CImageCodecs

/// GIF with giflib: the first frame, composited on a transparent canvas (the logical screen,
/// enlarged to hold that frame), its transparent colour applied and interlaced rows put in place;
/// the file's frames and loop count are counted without decoding them (`DecodedImage.animation`).
///
/// Incrementally, the first frame's rows appear as they arrive (an interlaced frame's passes,
/// each row repeated below it until later passes replace it). giflib cannot suspend mid-stream, so
/// a partial frame is decoded again from the start of the data when one is wanted
/// (`wantsPartialFrames`) and a quarter more data has come; once the first frame is whole, the
/// rest of the file is only counted.
public final class GIFDecoder: IncrementalImageDecoder {
    private let options: DecodeOptions
    private var data: [UInt8] = []
    private var canvas: UnsafeMutableBufferPointer<UInt8>?
    private var canvasSize: (width: Int, height: Int)?
    private var found = iw_gif_result()
    /// `data.count` when a partial frame was last decoded.
    private var decodedUpTo = 0
    private var animation: Animation?
    private var failure: DecodeError?
    public private(set) var isComplete = false

    public var format: ImageFormat { .gif }

    public init(options: DecodeOptions = DecodeOptions()) {
        self.options = options
    }

    deinit { canvas?.deallocate() }

    public func feed(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        try DecodeError.final(&failure) { () throws(DecodeError) in try take(bytes, isLast: isLast) }
    }

    private func take(_ bytes: UnsafeRawBufferPointer, isLast: Bool) throws(DecodeError) -> DecodeProgress {
        data += bytes
        var progress: DecodeProgress = []
        if canvas == nil {
            guard let size = try GIFDecoder.canvasSize(data, complete: isLast, options: options) else { return [] }
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: size.width * size.height * 4)
            buffer.initialize(repeating: 0)
            (canvas, canvasSize) = (buffer, size)
            progress.insert(.header)
        }
        guard let canvas, let (width, height) = canvasSize else { return progress }
        let rowsBefore = found.rows
        if isLast {
            // The whole file: the first frame's pixels if a partial decode has not finished them,
            // and every frame counted.
            try decode(into: canvas, width: width, height: height, complete: true, first: found.first_complete == 0)
            animation = GIFDecoder.animation(found)
            isComplete = true
            progress.formUnion([.pixels, .complete])
        } else if found.first_complete == 0, wantsPartialFrames, data.count - decodedUpTo >= max(4096, decodedUpTo / 4) {
            // Each partial decode starts over: only after a quarter more data (4 KiB at least), so
            // that all of them together cost a few whole decodes, whatever the chunks.
            try decode(into: canvas, width: width, height: height, complete: false, first: true)
            decodedUpTo = data.count
            if found.rows > rowsBefore { progress.insert(.pixels) }
        }
        return progress
    }

    private func decode(into canvas: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int, complete: Bool, first: Bool)
        throws(DecodeError)
    {
        let status = data.withUnsafeBufferPointer {
            iw_gif_decode(
                $0.baseAddress, $0.count, complete ? 1 : 0, options.maxPixels, UInt32(clamping: options.maxFrames), first ? 1 : 0,
                canvas.baseAddress, UInt32(width), UInt32(height), &found)
        }
        guard status == 0 else { throw GIFDecoder.error(found, width: width, height: height) }
    }

    /// The canvas's size once the first image descriptor is in (nil before, unless `complete`),
    /// checked against the pixel limit.
    static func canvasSize(_ data: [UInt8], complete: Bool, options: DecodeOptions) throws(DecodeError) -> (width: Int, height: Int)? {
        var walk = iw_gif_walk()
        return try canvasSize(data, complete: complete, options: options, walk: &walk)
    }

    /// `canvasSize`, with what the walk over a `complete` file's blocks found in `walk` (its
    /// frames, for `AnimationDecoder`: the walk is made once).
    static func canvasSize(_ data: [UInt8], complete: Bool, options: DecodeOptions, walk: inout iw_gif_walk) throws(DecodeError)
        -> (width: Int, height: Int)?
    {
        // The logical screen first, from the first 10 bytes: a canvas at least that large.
        if data.count >= 10, data.starts(with: "GIF".utf8) {
            try ImageDecoders.checkPixelLimit((Int(data[6]) | Int(data[7]) << 8, Int(data[8]) | Int(data[9]) << 8), options)
        }
        var width: UInt32 = 0
        var height: UInt32 = 0
        var frameWidth: UInt32 = 0
        var frameHeight: UInt32 = 0
        let status = data.withUnsafeBufferPointer { iw_gif_canvas($0.baseAddress, $0.count, &width, &height, &frameWidth, &frameHeight) }
        if status == 1 {
            guard complete else { return nil }
            throw .truncated("the data ends before the GIF's first image descriptor")
        }
        guard status == 0 else { throw .corrupt("not a GIF with an image: no image descriptor before the trailer, or one of 0 pixels") }
        try ImageDecoders.checkPixelLimit((Int(width), Int(height)), options)
        if complete {
            // The whole file: the first frame's data must be able to hold it before the canvas is
            // made (a few bytes cannot make the worker allocate a large bitmap).
            _ = data.withUnsafeBufferPointer { iw_gif_walk_frames($0.baseAddress, $0.count, &walk) }
            if walk.first_pixels > walk.first_bytes &* 16384 {
                throw .truncated(
                    "the GIF's first frame of \(frameWidth)x\(frameHeight) pixels cannot be held in \(walk.first_bytes) bytes of image data")
            }
        }
        let (canvas, frame) = (Int(width) * Int(height), Int(frameWidth) * Int(frameHeight))
        if canvas > sparseCanvasFloor, canvas / sparseCanvasRatio > frame {
            // Only the first frame is shown: the rest of such a canvas is transparent, bitmap memory
            // a few bytes of header would make the worker allocate (a decompression bomb).
            throw .limit(
                "the GIF's canvas of \(width)x\(height) pixels is more than \(sparseCanvasRatio) times its first frame "
                    + "(\(frameWidth)x\(frameHeight)): refused as a decompression bomb",
                width: Int(width), height: Int(height))
        }
        return (Int(width), Int(height))
    }

    /// A canvas above this many pixels (2048 x 2048) may not exceed its first frame more than
    /// `sparseCanvasRatio` times.
    static let sparseCanvasFloor = 2048 * 2048
    static let sparseCanvasRatio = 64

    static func error(_ found: iw_gif_result, width: Int, height: Int) -> DecodeError {
        DecodeError(
            kind: Int(found.error_kind), message: ImageDecoders.text(inArray: found.error), width: width, height: height, format: "GIF")
    }

    /// What a whole file's decode found of its frames and loops (nil for a single frame).
    static func animation(_ found: iw_gif_result) -> Animation? {
        Animation.of(frames: Int(found.frame_count), loops: found.loop_count >= 0 ? Int(found.loop_count) : nil)
    }

    public var size: (width: Int, height: Int)? { canvasSize }
    public var filledRows: Int { isComplete ? canvasSize?.height ?? 0 : Int(found.filled) }
    public var completedPasses: Int { found.interlaced != 0 ? Int(found.passes) : 0 }
    /// Whether a partial frame is decoded on the next `feed` (decoding it again from the start).
    public var wantsPartialFrames = true
    public var orientation: Int { 1 }

    public func currentImage() -> DecodedImage? {
        withCurrentPixels { frame in
            DecodedImage(width: frame.width, height: frame.height, layout: .rgba, pixels: Array(frame.bytes), format: .gif, animation: animation)
                .converted(to: options.layout)
        }
    }

    public func withCurrentPixels<R>(_ body: (BorrowedPixels) throws -> R) rethrows -> R? {
        guard let canvas, let (width, height) = canvasSize, filledRows > 0 else { return nil }
        return try body(BorrowedPixels(width: width, height: height, layout: .rgba, bytes: UnsafeBufferPointer(canvas)))
    }

    /// A whole GIF's first frame in the options' layout, decoded straight into the returned array.
    public static func decode(_ data: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        guard let (width, height) = try canvasSize(data, complete: true, options: options) else { throw .truncated("no GIF header") }
        var found = iw_gif_result()
        var failure: DecodeError?
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, initialized in
            buffer.initialize(repeating: 0)
            initialized = buffer.count
            let status = data.withUnsafeBufferPointer {
                iw_gif_decode(
                    $0.baseAddress, $0.count, 1, options.maxPixels, UInt32(clamping: options.maxFrames), 1, buffer.baseAddress,
                    UInt32(width), UInt32(height), &found)
            }
            if status != 0 { failure = error(found, width: width, height: height) }
        }
        if let failure { throw failure }
        return DecodedImage(width: width, height: height, layout: .rgba, pixels: pixels, format: .gif, animation: animation(found))
            .converted(to: options.layout)
    }
}
