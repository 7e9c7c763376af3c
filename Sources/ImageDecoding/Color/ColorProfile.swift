internal import CImageCodecs

/// What a decoder does with a file's colour information (`output.colorProfile`).
public enum ColorHandling: String, Sendable, CaseIterable {
    /// Converted to sRGB through the file's embedded profile (JPEG APP2, PNG `iCCP`, WebP `ICCP`,
    /// AVIF `colr`), its PNG `cICP` or `cHRM` chunk or its AVIF colour primaries: what a browser
    /// shows. Files without such information are taken as sRGB, as browsers take them.
    case srgb
    /// The values as stored, and the embedded ICC profile's bytes beside them (`iccProfile`).
    case keep
}

/// What a file says its colours mean, read from its bytes without decoding (before its image
/// data: a progressive decode has it before its first partial image).
public struct ColorProfile: Sendable, Equatable {
    /// The embedded ICC profile.
    public var icc: [UInt8]?
    /// ISO/IEC 23091-2 colour primaries and transfer characteristics (a PNG `cICP` chunk, an AVIF
    /// `nclx` colour box).
    var cicp: (primaries: Int, transfer: Int)?
    /// A PNG `cHRM` chunk's red, green, blue and white CIE xy, and whether a `gAMA` chunk made
    /// libpng give values on a 2.2 power curve.
    var chromaticities: [Double]?
    var gamma22 = false
    /// A PNG `sRGB` chunk.
    var isSRGB = false

    public init(icc: [UInt8]? = nil) { self.icc = icc }

    init(icc: [UInt8]?, cicp: (Int, Int)?) {
        self.icc = icc
        self.cicp = cicp
    }

    public static func == (a: ColorProfile, b: ColorProfile) -> Bool {
        a.icc == b.icc && a.cicp?.primaries == b.cicp?.primaries && a.cicp?.transfer == b.cicp?.transfer
            && a.chromaticities == b.chromaticities && a.gamma22 == b.gamma22 && a.isSRGB == b.isSRGB
    }

    /// Whether the file says anything about its colours.
    public var isEmpty: Bool { icc == nil && cicp == nil && chromaticities == nil && !isSRGB }

    /// What the first bytes of a file say, once they hold all they can say before the image data
    /// (a JPEG's frame header, a PNG's first IDAT, a WebP's image chunk); nil before.
    public static func readHead(_ bytes: [UInt8], format: ImageFormat) -> ColorProfile? {
        switch format {
        case .jpeg:
            return ImageDecoders.probeSize(bytes) == nil ? nil : read(bytes, format: .jpeg)
        case .png, .webp:
            let (profile, complete) = bytes.withUnsafeBytes { scanned($0, format: format) }
            return complete ? profile : nil
        default:
            return ColorProfile()
        }
    }

    /// `read` of an array.
    public static func read(_ bytes: [UInt8], format: ImageFormat) -> ColorProfile {
        bytes.withUnsafeBytes { read($0, format: format) }
    }

    /// The colour information in a file of `format` (a JPEG's APP2 profile; a PNG's cICP, iCCP,
    /// sRGB, cHRM and gAMA chunks; a WebP's ICCP chunk), as far as `bytes` go. AVIF's is read by
    /// its decoder; GIF has none.
    public static func read(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) -> ColorProfile {
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var profile = ColorProfile()
        switch format {
        case .jpeg:
            var icc: UnsafeMutablePointer<UInt8>?
            var length = 0
            if iw_jpeg_scan_icc(data, bytes.count, &icc, &length) == 1, let icc {
                profile.icc = Array(UnsafeBufferPointer(start: icc, count: length))
                iw_free(icc)
            }
        case .png, .webp:
            profile = scanned(bytes, format: format).profile
        default:
            break
        }
        return profile
    }

    /// A PNG's or WebP's colour chunks, and whether the bytes reach its image data (all of them
    /// are then in).
    private static func scanned(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) -> (profile: ColorProfile, complete: Bool) {
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var tags = iw_color_tags()
        let complete = format == .png ? iw_png_scan_color(data, bytes.count, &tags) : iw_webp_scan_color(data, bytes.count, &tags)
        defer { iw_color_tags_free(&tags) }
        var profile = ColorProfile()
        if let icc = tags.icc { profile.icc = Array(UnsafeBufferPointer(start: icc, count: tags.icc_length)) }
        if tags.has_cicp != 0 { profile.cicp = (Int(tags.cicp_primaries), Int(tags.cicp_transfer)) }
        if tags.has_chrm != 0 { profile.chromaticities = withUnsafeBytes(of: tags.xy) { Array($0.bindMemory(to: Double.self)) } }
        profile.gamma22 = tags.has_gama != 0
        profile.isSRGB = tags.srgb != 0
        return (profile, complete == 1)
    }
}
