import ImageDecoding
import ImageDownloader
import ImageWorkerProtocol

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

/// `download` params, checked.
struct DownloadParams {
    static let fields = [
        "url", "token", "priority", "headers", "timeoutMs", "deadlineMs", "maxRetries", "retryDelayMs", "credentials",
        "allowInvalidCertificates", "handleCookies", "retryFailed", "cachePolicy", "progressive", "quiet", "output",
    ]

    var request: DownloadRequest
    var output: OutputSpec
    var progressive: Bool
    /// Whether the client chose the token.
    var tokenGiven: Bool

    init(_ rpc: RPCRequest) throws(RPCError) {
        let p = try ParamReader(rpc, allowed: DownloadParams.fields)
        let url = try p.requiredString("url")
        let given = try p.token()
        let token = given ?? DownloadToken.random()
        tokenGiven = given != nil
        var priority = DownloadPriority.normal
        if let name = try p.oneOf("priority", DownloadPriority.allCases.map(\.name)) {
            priority = DownloadPriority(name: name)!
        }
        let headers = try p.object("headers").map { o throws(RPCError) in try HeaderValidation.headers(o, field: "headers") } ?? []
        let timeout = try p.integer("timeoutMs", in: OptionTable.Download.timeoutMs)
        var credentials: Credentials?
        if let c = try p.object("credentials") {
            guard case .string(let user)? = c["user"], case .string(let password)? = c["password"], c.count == 2 else {
                throw .invalidParams("\"credentials\" must be {\"user\": string, \"password\": string}")
            }
            credentials = Credentials(user: user, password: password)
        }
        request = DownloadRequest(
            token: token, url: url, priority: priority, headers: headers, timeoutMs: timeout,
            credentials: credentials, allowInvalidCertificates: try p.bool("allowInvalidCertificates") ?? false,
            handleCookies: try p.bool("handleCookies") ?? false, retryFailed: try p.bool("retryFailed") ?? false)
        request.deadlineMs = try p.integer("deadlineMs", in: OptionTable.Download.deadlineMs)
        if let v = try p.oneOf("cachePolicy", CachePolicy.allCases.map(\.rawValue)) { request.cachePolicy = CachePolicy(rawValue: v)! }
        request.maxRetries = try p.integer("maxRetries", in: OptionTable.Download.maxRetries).map { Int($0) }
        request.retryDelayMs = try p.integer("retryDelayMs", in: OptionTable.Download.retryDelayMs)
        progressive = try p.bool("progressive") ?? false
        request.quiet = try p.bool("quiet") ?? false
        output = try DownloadParams.output(try p.object("output"))
        // Every field has its type now: the rules between them (the schema's, as the clients check them).
        if case .object(let params)? = rpc.params { try OptionRule.check(params) }
        if progressive && output.fileName?.needsDigest == true {
            throw .invalidParams("progressive partial images are written before the final bytes exist: a {sha256} name cannot be used")
        }
        request.streamsBody = progressive
    }

    static func output(_ object: JSONObject?) throws(RPCError) -> OutputSpec {
        var spec = OutputSpec()
        guard let object else { return spec }
        let p = try ParamReader(
            RPCRequest(id: nil, method: "output", params: .object(object)),
            allowed: [
                "delivery", "format", "path", "dir", "name", "nameTemplate", "index", "overwrite", "skipExisting", "verify", "sha256",
                "minImageSize", "maxImageArea", "maxAspectRatio", "maxPixelSize", "maxPixelCount", "width", "height", "fit", "position", "background", "withoutEnlargement",
                "applyOrientation", "colorProfile", "frames", "partialIntervalMs", "partialMaxPixelSize", "quality", "lossless", "chromaSubsampling",
            ])
        if let d = try p.oneOf("delivery", OutputSpec.Delivery.allCases.map(\.rawValue)) {
            spec.delivery = OutputSpec.Delivery(rawValue: d)!
        }
        if let f = try p.string("format") {
            guard let format = OutputSpec.Format(rawValue: f) else {
                throw .invalidParams(
                    "output.format \"\(f)\" is not available; this worker delivers: "
                        + OutputSpec.Format.allCases.map(\.rawValue).joined(separator: ", "))
            }
            spec.format = format
        }
        let path = try p.string("path")
        let dir = try p.string("dir")
        let name = try p.string("name")
        let nameTemplate = try p.string("nameTemplate")
        let index = try p.integer("index", in: OptionTable.Output.index)
        spec.overwrite = try p.bool("overwrite") ?? false
        spec.skipExisting = try p.bool("skipExisting") ?? false
        // true or "header": the header; "full": every pixel too; false: nothing.
        switch try p.boolOrOneOf("verify", ["header", "full"]) {
        case .string("full")?: (spec.verify, spec.verifyPixels) = (true, true)
        case .string?, .bool(true)?: spec.verify = true
        default: spec.verify = false
        }
        spec.sha256 = try p.bool("sha256") ?? false
        spec.sizeFilter.minImageSize = try p.integer("minImageSize", in: OptionTable.Output.minImageSize).map { Int($0) }
        spec.sizeFilter.maxImageArea = try p.integer("maxImageArea", in: OptionTable.Output.maxImageArea)
        spec.sizeFilter.maxAspectRatio = try p.number("maxAspectRatio", in: OptionTable.Output.maxAspectRatio)
        // Both a name and a template, or both a path and a dir, are refused by `OptionRule` (in `init`).
        if let name {
            spec.fileName = try FileNameTemplate.fixed(name)
        } else if let nameTemplate {
            spec.fileName = try FileNameTemplate(parsing: nameTemplate, index: index)
        }
        spec.maxPixelSize = try p.integer("maxPixelSize", in: OptionTable.Output.maxPixelSize).map { Int($0) }
        spec.maxPixelCount = try p.integer("maxPixelCount", in: OptionTable.Output.maxPixelCount).map { Int($0) }
        spec.applyOrientation = try p.bool("applyOrientation") ?? false
        if let handling = try p.oneOf("colorProfile", ColorHandling.allCases.map(\.rawValue)) { spec.colorProfile = ColorHandling(rawValue: handling)! }
        if let frames = try p.oneOf("frames", FrameSelection.allCases.map(\.rawValue)) { spec.frames = FrameSelection(rawValue: frames)! }
        let width = try p.integer("width", in: OptionTable.Output.width).map { Int($0) }
        let height = try p.integer("height", in: OptionTable.Output.height).map { Int($0) }
        // Without width and height, fit, position and withoutEnlargement are refused by
        // `OptionRule` (in `init`).
        if width != nil || height != nil {
            var box = OutputGeometry.Box(width: width, height: height)
            if let fit = try p.oneOf("fit", FitPlan.Fit.allCases.map(\.rawValue)) { box.fit = FitPlan.Fit(rawValue: fit)! }
            if let position = try p.oneOf("position", FitPlan.Position.allCases.map(\.rawValue)) {
                box.position = FitPlan.Position(rawValue: position)!
            }
            box.withoutEnlargement = try p.bool("withoutEnlargement") ?? false
            spec.geometry.box = box
        }
        // The contain canvas' colour, and what a format without alpha flattens transparency onto.
        if let text = try p.string("background") {
            guard let color = BackgroundColor(hex: text) else {
                throw .invalidParams("output.background must be #rrggbb or #rrggbbaa (hex), not \"\(text)\"")
            }
            spec.geometry.background = color
        }
        spec.partialIntervalMs = try p.integer("partialIntervalMs", in: OptionTable.Output.partialIntervalMs) ?? spec.partialIntervalMs
        spec.partialMaxPixelSize = try p.integer("partialMaxPixelSize", in: OptionTable.Output.partialMaxPixelSize).map { Int($0) }
        spec.quality = try p.integer("quality", in: OptionTable.Output.quality).map { Int($0) }
        spec.lossless = try p.bool("lossless") ?? false
        if let s = try p.oneOf("chromaSubsampling", ChromaSubsampling.allCases.map(\.rawValue)) {
            spec.chromaSubsampling = ChromaSubsampling(rawValue: s)
        }
        // Which of path, dir, name, nameTemplate, overwrite and skipExisting go together, and with
        // which delivery, is `OptionRule`'s (checked in `init`).
        if let path {
            guard !path.isEmpty, !path.hasSuffix("/") else { throw .invalidParams("output.path must name a file") }
            spec.target = .path(path)
        } else if let dir {
            guard !dir.isEmpty else { throw .invalidParams("output.dir must not be empty") }
            spec.target = .directory(dir)
        }
        if spec.skipExisting, spec.fileName?.needsDigest == true {
            throw .invalidParams("output.skipExisting needs a name known before the download: {sha256} depends on the bytes")
        }
        return spec
    }
}

extension DownloadToken {
    var json: JSONValue {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        }
    }

    init?(json: JSONValue) {
        switch json {
        case .string(let s) where !s.isEmpty: self = .string(s)
        case .int(let i): self = .int(i)
        default: return nil
        }
    }
}
