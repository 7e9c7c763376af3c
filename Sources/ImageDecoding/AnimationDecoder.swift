internal import CImageCodecs

/// Every frame of an animation (`DecodeOptions.frames` `.all`): a GIF's frames composited with
/// their transparency and disposal as browsers show them (`iw_gif_frames.c`), an animated WebP's
/// through libwebp's animation decoder, an AVIF sequence's images. Each frame is turned into what
/// the caller keeps (`shape`: sRGB, then the size asked) as soon as it is decoded, so that the
/// memory held is one canvas and the shaped frames, never every frame at full size.
///
/// Bounded before any pixel buffer, from what the file says without decoding: the frames (a
/// GIF's blocks walked, a WebP's chunks, an AVIF's sample table) against `maxFrames`, and every
/// frame's pixels together (frames × canvas) against `maxPixels`.
public enum AnimationDecoder {
    /// What a file's headers say of its frames.
    public struct Frames: Sendable, Equatable {
        public var format: ImageFormat
        /// The canvas every frame is shown on.
        public var width: Int, height: Int
        public var count: Int
        /// Loops after the first play (0: forever); nil when the file does not say.
        public var loopCount: Int?
        /// What the container says besides (AVIF's: read with the frames), for the decode.
        var profile = ColorProfile()
        var orientation = 1
        var hasAlpha = true
    }

    /// The frames of an animated GIF, WebP or AVIF read from its headers, checked against the
    /// limits; nil for any other file, or one frame.
    public static func frames(_ data: [UInt8], options: DecodeOptions) throws(DecodeError) -> Frames? {
        let frames: Frames
        switch ImageFormat.detect(data) {
        case .gif?:
            var walk = iw_gif_walk()
            guard let canvas = try GIFDecoder.canvasSize(data, complete: true, options: options, walk: &walk) else { return nil }
            frames = Frames(
                format: .gif, width: canvas.width, height: canvas.height, count: Int(walk.frames),
                loopCount: walk.loop_count >= 0 ? Int(walk.loop_count) : nil)
        case .webp?:
            var info = iw_webp_info()
            var image = iw_image()
            let status = data.withUnsafeBufferPointer {
                iw_webp_header($0.baseAddress, $0.count, 1, options.maxPixels, UInt32(clamping: options.maxFrames), &info, &image)
            }
            guard status == 0 else { throw ImageDecoders.error(image, format: "WebP") }
            guard info.animated != 0 else { return nil }
            frames = Frames(format: .webp, width: Int(info.width), height: Int(info.height), count: Int(info.frame_count),
                            loopCount: Int(info.loop_count))
        case .avif?:
            var info = iw_avif_info()
            var image = iw_image()
            let status = data.withUnsafeBufferPointer {
                iw_avif_header($0.baseAddress, $0.count, options.maxPixels, UInt32(clamping: options.maxFrames), &info, &image)
            }
            let profile = AVIFDecoder.takeProfile(&info)
            guard status == 0 else { throw ImageDecoders.error(image, format: "AVIF") }
            frames = Frames(
                format: .avif, width: Int(info.width), height: Int(info.height), count: Int(info.frame_count), loopCount: nil,
                profile: profile, orientation: Int(info.orientation), hasAlpha: info.has_alpha != 0)
        default:
            return nil
        }
        guard frames.count > 1 else { return nil }
        try check(frames, options)
        return frames
    }

    /// Refuses more frames than `maxFrames`, or more pixels in all the frames than `maxPixels`.
    static func check(_ frames: Frames, _ options: DecodeOptions) throws(DecodeError) {
        if frames.count > options.maxFrames {
            throw .limit(
                "animation of \(frames.count) frames exceeds the limit of \(options.maxFrames) frames", width: frames.width, height: frames.height)
        }
        let (total, overflow) = UInt64(frames.count).multipliedReportingOverflow(by: UInt64(frames.width) * UInt64(frames.height))
        if overflow || total > options.maxPixels {
            throw .limit(
                "animation of \(frames.count) frames of \(frames.width)x\(frames.height) pixels (\(overflow ? "over 2^64" : String(total)) in all) "
                    + "exceeds the limit of \(options.maxPixels) pixels",
                width: frames.width, height: frames.height)
        }
    }

    /// Every frame of the animation `frames` describes (read by `frames(_:options:)`), each in the
    /// options' colours and layout, then `shape`d; the first frame is the image, the others in
    /// its `animation` with every frame's delay.
    public static func decode(
        _ data: [UInt8], frames: Frames, options: DecodeOptions, shape: @escaping (DecodedImage) -> DecodedImage
    ) throws(DecodeError) -> DecodedImage {
        var profile = ColorProfile()
        var orientation = 1
        // AVIF: alpha only when asked for and present (as its still decode).
        var channels = 4
        switch frames.format {
        case .avif:
            (profile, orientation) = (frames.profile, frames.orientation)
            channels = options.layout == .rgba && frames.hasAlpha ? 4 : 3
        case .webp:
            profile = ColorProfile.read(data, format: .webp)
            orientation = data.withUnsafeBytes { ImageDecoders.recordedOrientation($0, format: .webp) }
        default:
            break
        }
        let collector = Collector(
            frames: frames, layout: channels == 4 ? .rgba : .rgb, orientation: orientation, profile: profile, options: options,
            shape: shape)
        let context = Unmanaged.passUnretained(collector).toOpaque()
        let sink: iw_frame_sink = { context, pixels, _, delay in
            guard let context, let pixels else { return 1 }
            return Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue().take(pixels, delayMs: Int(delay))
        }
        var result = iw_image()
        let limit = UInt32(clamping: options.maxFrames)
        let status = withExtendedLifetime(collector) {
            data.withUnsafeBufferPointer { bytes -> Int32 in
                switch frames.format {
                case .gif:
                    return iw_gif_decode_frames(
                        bytes.baseAddress, bytes.count, UInt32(frames.width), UInt32(frames.height), limit, sink, context, &result)
                case .webp:
                    return iw_webp_decode_frames(bytes.baseAddress, bytes.count, limit, sink, context, &result)
                default:
                    return iw_avif_decode_frames(
                        bytes.baseAddress, bytes.count, Int32(channels), UInt32(frames.width), UInt32(frames.height), limit, sink, context,
                        &result)
                }
            }
        }
        if let failure = collector.failure { throw failure }
        guard status == 0, var first = collector.first else {
            throw ImageDecoders.error(result, format: frames.format.rawValue.uppercased())
        }
        // (The file's frames: one cut or damaged after its first frame delivers those before,
        // `DecodedImage.frameCount`.)
        var animation = Animation(frameCount: frames.count, loopCount: frames.loopCount)
        animation.delaysMs = collector.delays
        animation.laterFrames = collector.later
        first.animation = animation
        return first
    }

    /// Receives the frames from the C decoders' sink, on the decoding thread.
    private final class Collector {
        let frames: Frames
        let layout: PixelLayout
        let orientation: Int
        let profile: ColorProfile
        let options: DecodeOptions
        let shape: (DecodedImage) -> DecodedImage
        var first: DecodedImage?
        var later: [[UInt8]] = []
        var delays: [Int] = []
        var failure: DecodeError?

        init(frames: Frames, layout: PixelLayout, orientation: Int, profile: ColorProfile, options: DecodeOptions,
             shape: @escaping (DecodedImage) -> DecodedImage) {
            (self.frames, self.layout, self.orientation, self.profile, self.options, self.shape) = (frames, layout, orientation, profile, options, shape)
        }

        /// 0 to go on, 1 to stop (a frame unlike the first).
        func take(_ pixels: UnsafePointer<UInt8>, delayMs: Int) -> Int32 {
            let count = frames.width * frames.height * layout.channels
            var image = DecodedImage(
                width: frames.width, height: frames.height, layout: layout, pixels: Array(UnsafeBufferPointer(start: pixels, count: count)),
                orientation: orientation, format: frames.format)
            image.manageColor(profile, options.colorProfile)
            let shaped = shape(image.converted(to: options.layout))
            delays.append(delayMs)
            guard let first else {
                first = shaped
                return 0
            }
            guard shaped.width == first.width, shaped.height == first.height, shaped.layout == first.layout else {
                failure = .corrupt("a frame came out unlike the first")
                return 1
            }
            later.append(shaped.pixels)
            return 0
        }
    }
}
