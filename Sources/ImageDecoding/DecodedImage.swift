internal import CImageCodecs

/// How pixels are laid out: 8 bits per channel, rows top to bottom, no padding.
public enum PixelLayout: String, Sendable, CaseIterable {
    case rgba, rgb, gray

    public var channels: Int {
        switch self {
        case .rgba: return 4
        case .rgb: return 3
        case .gray: return 1
        }
    }
}

/// Decoded pixels.
public struct DecodedImage: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var layout: PixelLayout
    /// `width * layout.channels * height` bytes.
    public var pixels: [UInt8]
    /// EXIF orientation 1…8 as found in the file (1 when absent), not yet applied.
    public var orientation: Int
    public var format: ImageFormat
    /// For an animated file (several frames), what it holds besides the first frame, which is
    /// these pixels; nil for a still image.
    public var animation: Animation?
    /// The file's ICC profile when its values were kept as stored (`ColorHandling.keep`); nil
    /// when they were converted to sRGB, or the file has none.
    public var iccProfile: [UInt8]?

    public init(
        width: Int, height: Int, layout: PixelLayout, pixels: [UInt8], orientation: Int = 1, format: ImageFormat, animation: Animation? = nil
    ) {
        precondition(pixels.count == width * height * layout.channels, "pixel buffer does not match the size")
        self.width = width
        self.height = height
        self.layout = layout
        self.pixels = pixels
        self.orientation = orientation
        self.format = format
        self.animation = animation
    }

    public var stride: Int { width * layout.channels }

    /// The same image in another layout: RGBA→RGB drops alpha, colour→gray uses BT.601 luma
    /// (as libjpeg does), gray→colour repeats the value, and added alpha is opaque
    /// (`iw_convert_pixels`, the conversion the C resampler uses too).
    public func converted(to target: PixelLayout) -> DecodedImage {
        guard target != layout else { return self }
        let count = width * height
        let out = [UInt8](unsafeUninitializedCapacity: count * target.channels) { buffer, initialized in
            pixels.withUnsafeBufferPointer {
                iw_convert_pixels($0.baseAddress, Int32(layout.channels), buffer.baseAddress, Int32(target.channels), count)
            }
            initialized = count * target.channels
        }
        return withPixels(out, width: width, height: height, layout: target)
    }

    /// Other pixels of this image (its format, orientation unless given, animation and profile).
    func withPixels(_ pixels: [UInt8], width: Int, height: Int, layout: PixelLayout? = nil, orientation: Int? = nil) -> DecodedImage {
        var image = DecodedImage(
            width: width, height: height, layout: layout ?? self.layout, pixels: pixels, orientation: orientation ?? self.orientation,
            format: format, animation: animation)
        image.iccProfile = iccProfile
        return image
    }
}

/// What an animated image (GIF, WebP, AVIF sequence) holds beyond the first frame it is decoded as.
public struct Animation: Sendable, Equatable {
    /// Frames in the file (2 or more).
    public var frameCount: Int
    /// How many times the animation plays after the first (0: forever); nil when the file does
    /// not say (a GIF without a NETSCAPE2.0 block plays once).
    public var loopCount: Int?

    /// With every frame decoded (`DecodeOptions.frames` `.all`): how long each frame is shown,
    /// in milliseconds as the file says (the first's included); empty otherwise.
    public var delaysMs: [Int] = []
    /// With every frame decoded: the pixels of the frames after the first, each laid out as the
    /// image's own (its size and layout); empty otherwise.
    public var laterFrames: [[UInt8]] = []

    public init(frameCount: Int, loopCount: Int?) {
        self.frameCount = frameCount
        self.loopCount = loopCount
    }

    /// The animation of a file with `frames` frames: nil for a still image.
    static func of(frames: Int, loops: Int?) -> Animation? {
        frames > 1 ? Animation(frameCount: frames, loopCount: loops) : nil
    }
}

/// Which frames of an animation are decoded.
public enum FrameSelection: String, Sendable, CaseIterable {
    /// The first (the image; the others counted).
    case first
    /// Every frame (`AnimationDecoder`).
    case all
}

extension DecodedImage {
    /// The frames this image holds: 1, or with every frame decoded, the animation's.
    public var frameCount: Int { 1 + (animation?.laterFrames.count ?? 0) }

    /// `transform` applied to every frame this image holds (the first and, with every frame
    /// decoded, the later ones, which must come out alike); the animation kept.
    public func mapFrames(_ transform: (DecodedImage) throws(DecodeError) -> DecodedImage) throws(DecodeError) -> DecodedImage {
        guard var animation, !animation.laterFrames.isEmpty else { return try transform(self) }
        var first = self
        first.animation = nil
        var result = try transform(first)
        animation.laterFrames = try animation.laterFrames.map { pixels throws(DecodeError) -> [UInt8] in
            let frame = try transform(first.withPixels(pixels, width: width, height: height))
            guard frame.width == result.width, frame.height == result.height, frame.layout == result.layout else {
                throw .corrupt("a frame came out unlike the first")
            }
            return frame.pixels
        }
        result.animation = animation
        return result
    }

    /// `mapFrames` of a transform that cannot fail (and makes every frame alike: a frame that
    /// came out otherwise would be dropped).
    public func mapFrames(_ transform: (DecodedImage) -> DecodedImage) -> DecodedImage {
        if let mapped = try? mapFrames({ image throws(DecodeError) in transform(image) }) { return mapped }
        var first = self
        let firstDelay = Array(animation?.delaysMs.prefix(1) ?? [])
        first.animation?.laterFrames = []
        first.animation?.delaysMs = firstDelay
        return transform(first)
    }

    /// Every frame's pixels (the first's, then the later ones').
    public var allFramePixels: [[UInt8]] { [pixels] + (animation?.laterFrames ?? []) }

    /// Every frame's pixels one after the other, in one array (the first frame's own when it is
    /// the only one).
    public var joinedFramePixels: [UInt8] {
        guard let later = animation?.laterFrames, !later.isEmpty else { return pixels }
        let size = pixels.count
        return [UInt8](unsafeUninitializedCapacity: size * (1 + later.count)) { buffer, initialized in
            for (index, frame) in ([pixels] + later).enumerated() {
                frame.withUnsafeBufferPointer { source in
                    guard let base = source.baseAddress else { return }
                    (buffer.baseAddress! + index * size).initialize(from: base, count: min(size, source.count))
                }
            }
            initialized = size * (1 + later.count)
        }
    }
}

/// Why decoding failed.
public enum DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The data is not a valid image (or is 0×0).
    case corrupt(String)
    /// The data ends before the image does.
    case truncated(String)
    /// A valid image of a kind this worker does not decode (BMP, TIFF, HEIC, 12-bit JPEG…).
    case unsupported(String)
    /// Over a configured limit (checked from the header, before any pixel buffer exists).
    case limit(String, width: Int, height: Int)
    case outOfMemory(String)

    public var description: String {
        switch self {
        case .corrupt(let m): return "corrupt image data: \(m)"
        case .truncated(let m): return "truncated image data: \(m)"
        case .unsupported(let m): return m
        case .limit(let m, _, _): return m
        case .outOfMemory(let m): return m
        }
    }
}

extension DecodeError {
    /// `body`'s result, for a decoder whose failures are final: `failure` (its first one) is
    /// thrown again on every later call, and a new one is kept there.
    static func final<R>(_ failure: inout DecodeError?, _ body: () throws(DecodeError) -> R) throws(DecodeError) -> R {
        if let failure { throw failure }
        do throws(DecodeError) {
            return try body()
        } catch {
            failure = error
            throw error
        }
    }

    /// The C layer's error kinds (iw_jpeg.h), as errors.
    init(kind: Int, message: String, width: Int, height: Int, format: String) {
        switch kind {
        case Int(IW_ERR_UNSUPPORTED): self = .unsupported("unsupported \(format): \(message)")
        case Int(IW_ERR_LIMIT): self = .limit(message, width: width, height: height)
        case Int(IW_ERR_TRUNCATED): self = .truncated(message)
        case Int(IW_ERR_MEMORY): self = .outOfMemory(message)
        default: self = .corrupt(message)
        }
    }
}

/// What a decoder may do.
public struct DecodeOptions: Sendable, Equatable {
    /// The output layout.
    public var layout: PixelLayout = .rgba
    /// Images with more pixels are refused from their header (default 100 million, e.g. 12500×8000).
    public var maxPixels: UInt64 = 100_000_000
    /// Progressive JPEGs with more scans are refused (a scan is decoded over the whole image).
    public var maxScans = 1000
    /// JPEG DCT scaling: 1, 2, 4 or 8 (output is the size divided by it, rounded up).
    public var scaleDenominator = 1
    /// Animated GIF, WebP and AVIF files with more frames are refused (counted without decoding
    /// them; the first frame is the image).
    public var maxFrames = 50_000
    /// Colours converted to sRGB through the file's profile, or kept as stored.
    public var colorProfile = ColorHandling.srgb
    /// An animation's first frame, or every frame (`AnimationDecoder`; every frame's pixels then
    /// count against `maxPixels`).
    public var frames = FrameSelection.first

    public init() {}
}
