import ImageDecoding

/// How a token wants its result (the `output` param of `download`).
public struct OutputSpec: Sendable, Equatable {
    public enum Delivery: String, Sendable, CaseIterable {
        /// Metadata only.
        case none
        /// Written to `path`, or into `dir`, atomically (`AtomicFile`: complete before it has its name).
        case file
        /// Base64 `data` in the completed event.
        case inline
        /// A file in the worker's shared-memory folder (`SharedOutput`), named by `path` with
        /// `shared: true`, for the client to take; inline `data` for small payloads.
        case shared
    }

    public enum Format: String, Sendable, CaseIterable {
        /// The downloaded bytes as they came (no decoding).
        case original
        /// Decoded and re-encoded as an 8-bit PNG: RGB when every pixel is opaque, else RGBA.
        case png
        /// Decoded and re-encoded as a baseline JPEG (`quality`, `chromaSubsampling`); alpha dropped.
        case jpeg
        /// Decoded and re-encoded as WebP (`quality`, `lossless`); alpha kept where not opaque.
        /// With every frame: an animated WebP.
        case webp
        /// Decoded and re-encoded as a GIF (a palette per frame); with every frame, animated.
        case gif
        /// Decoded raw pixels, 8 bits per channel, rows top to bottom, no padding.
        case rgba, rgb, gray

        public var needsDecoding: Bool { self != .original }

        /// A file format (PNG, JPEG, WebP, GIF) rather than raw pixels or the original bytes.
        public var isEncoded: Bool { self == .png || self == .jpeg || self == .webp || self == .gif }

        /// The extension of a decoded format's files (`original` files take the bytes' own).
        var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

        /// The pixels a decoded format is made from (PNG and WebP: RGBA, or RGB where
        /// `decodeLayout` says; JPEG: RGB).
        public var layout: PixelLayout {
            switch self {
            case .rgb, .jpeg: return .rgb
            case .gray: return .gray
            case .original, .png, .webp, .gif, .rgba: return .rgba
            }
        }

        /// The layout to decode a file of `source` format in: PNG or WebP of a JPEG decodes to
        /// RGB (a JPEG has no alpha; the encoders would drop an opaque one anyway), saving a
        /// quarter of the bitmap and of the resampling.
        public func decodeLayout(for source: ImageFormat?) -> PixelLayout {
            (self == .png || self == .webp || self == .gif) && source == .jpeg ? .rgb : layout
        }

        /// A decoded image in this format's pixels: the raw formats' own layout; the encoded
        /// formats take RGB and RGBA as they come (PNG and WebP write RGB when every pixel is
        /// opaque, JPEG drops alpha).
        public func pixels(of image: DecodedImage) -> DecodedImage {
            isEncoded && image.layout != .gray ? image : image.converted(to: layout)
        }
    }

    public enum Target: Sendable, Equatable {
        case path(String)
        case directory(String)
    }

    public var delivery: Delivery = .none
    public var format: Format = .original
    public var target: Target?
    /// With `dir`: replace an existing file of the same name instead of choosing a new name.
    public var overwrite = false
    /// With `dir`: the file's name (`output.name` or `output.nameTemplate`); nil: the URL's.
    var fileName: FileNameTemplate?
    /// A target file that already exists is kept and reported (`skipped`), not fetched again.
    public var skipExisting = false
    /// `original`: refuse bytes that are not an image, and report the header's format and size.
    public var verify = false
    /// `original` with `verify: "full"`: decode every pixel too (nothing more is written).
    public var verifyPixels = false
    /// Report the delivered bytes' SHA-256 (`sha256`); implied by a `{sha256}` name.
    public var sha256 = false
    /// Images of these sizes fail the token before any decode (`minImageSize`, `maxImageArea`,
    /// `maxAspectRatio`).
    var sizeFilter = SizeFilter()

    /// Whether the event and the name need the delivered bytes' digest.
    var needsDigest: Bool { sha256 || fileName?.needsDigest == true }
    /// The image's size: `maxPixelSize`, `maxPixelCount`, or a box (`width`, `height`, `fit`,
    /// `position`, `background`, `withoutEnlargement`); `partialMaxPixelSize`.
    var geometry = OutputGeometry()
    /// Scale down (never up) so the longest side is at most this many pixels.
    public var maxPixelSize: Int? {
        get { geometry.maxPixelSize }
        set { geometry.maxPixelSize = newValue }
    }
    /// Scale down so the image has at most this many pixels.
    public var maxPixelCount: Int? {
        get { geometry.maxPixelCount }
        set { geometry.maxPixelCount = newValue }
    }
    /// Turn the image upright per its EXIF orientation (it is reported either way); a box is for
    /// the upright image then.
    public var applyOrientation: Bool {
        get { geometry.upright }
        set { geometry.upright = newValue }
    }
    /// Colours converted to sRGB through the file's profile (`srgb`), or kept as stored with the
    /// profile reported (`keep`).
    public var colorProfile = ColorHandling.srgb
    /// An animation's first frame, or every frame (WebP and GIF files animated, raw pixels one
    /// frame after the other).
    public var frames = FrameSelection.first
    /// With `progressive`: at least this long between two partial images of the token.
    public var partialIntervalMs: Int64 = 200
    /// With `progressive`: partial images no larger than this on their longest side (the final
    /// image keeps the sizes above); nil: partial images at the final image's size.
    public var partialMaxPixelSize: Int? {
        get { geometry.partialMaxPixelSize }
        set { geometry.partialMaxPixelSize = newValue }
    }
    /// JPEG and WebP: 1–100 (defaults 90 and 80); with `lossless`, WebP's effort.
    public var quality: Int?
    /// WebP: lossless instead of lossy.
    public var lossless = false
    /// JPEG: how colour is stored (default 4:2:0).
    public var chromaSubsampling: ChromaSubsampling?

    /// Whether transparency is flattened onto `background`: a format without alpha (JPEG, `rgb`,
    /// `gray`) with a background given.
    var flattens: Bool { geometry.background != nil && format.needsDecoding && format.layout != .rgba }

    /// The layout to decode a file of `source` in: RGBA when it is flattened (its alpha is
    /// needed), else the format's (`Format.decodeLayout`).
    func decodeLayout(for source: ImageFormat?) -> PixelLayout {
        flattens && source != .jpeg ? .rgba : format.decodeLayout(for: source)
    }

    /// A decoded image in this output's pixels: flattened onto `background` first when it
    /// flattens, then in the format's (`Format.pixels`).
    func pixels(of image: DecodedImage) -> DecodedImage {
        guard flattens, let background = geometry.background else { return format.pixels(of: image) }
        return format.pixels(of: image.flattened(onto: background))
    }

    /// How an encoded format is written; nil for raw pixels and originals.
    public var encoding: ImageEncoding? {
        switch format {
        case .png: return .png
        case .jpeg: return .jpeg(quality: quality ?? 90, subsampling: chromaSubsampling ?? .s420)
        case .webp: return .webp(quality: quality ?? 80, lossless: lossless)
        case .gif: return .gif
        case .original, .rgba, .rgb, .gray: return nil
        }
    }

    public init() {}

    /// Why `output.nameTemplate` (or, `fixed`, `output.name`) would be refused; nil when it is fine.
    /// `index`: the template's `output.index`.
    public static func nameProblem(_ text: String, fixed: Bool = false, index: Int64? = nil) -> String? {
        do {
            _ = fixed ? try FileNameTemplate.fixed(text) : try FileNameTemplate(parsing: text, index: index)
            return nil
        } catch {
            return error.message
        }
    }
}
