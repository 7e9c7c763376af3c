internal import CImageCodecs

/// Pixels turned into sRGB through what their file says of its colours (`ColorProfile`), with
/// Little CMS (`iw_color.c`: one transform per profile and layout, cached for the process).
/// Precedence as PNG's third edition gives it: `cICP`, then the ICC profile, then an `sRGB` chunk
/// (nothing to do), then `cHRM`. Gray output of a colour file is its stored luma (not converted).
enum SRGBConversion {
    /// The transform for `profile`'s pixels in `layout`, nil when there is nothing to do (sRGB
    /// already, nothing said, a profile that cannot be read or that is not for such pixels).
    static func transform(for profile: ColorProfile, layout: PixelLayout) -> OpaquePointer? {
        let target = layout.cLayout
        if let cicp = profile.cicp {
            return iw_color_from_cicp(UInt32(clamping: cicp.primaries), UInt32(clamping: cicp.transfer), target)
        }
        if let icc = profile.icc {
            return icc.withUnsafeBufferPointer { iw_color_from_icc($0.baseAddress, $0.count, IW_COLOR_FROM_PIXELS, target) }
        }
        if !profile.isSRGB, let xy = profile.chromaticities, xy.count == 8 {
            return xy.withUnsafeBufferPointer { iw_color_from_primaries($0.baseAddress, profile.gamma22 ? 2.2 : 0, target) }
        }
        return nil
    }
}

extension ColorProfile {
    /// Whether converting pixels of `layout` to sRGB changes them (a transform other than sRGB's
    /// to itself exists for them).
    public func changesColors(in layout: PixelLayout) -> Bool {
        guard !isEmpty, let transform = SRGBConversion.transform(for: self, layout: layout) else { return false }
        iw_color_release(transform)
        return true
    }
}

extension DecodedImage {
    /// The image as `handling` asks, from what its file says of its colours: converted to sRGB
    /// in place, or as stored with the file's ICC profile in `iccProfile`.
    public mutating func manageColor(_ profile: ColorProfile, _ handling: ColorHandling) {
        switch handling {
        case .keep:
            iccProfile = profile.icc
        case .srgb:
            guard !profile.isEmpty, let transform = SRGBConversion.transform(for: profile, layout: layout) else { return }
            defer { iw_color_release(transform) }
            let count = width * height
            pixels.withUnsafeMutableBufferPointer { iw_color_convert(transform, $0.baseAddress, $0.baseAddress, count) }
        }
    }

    /// `manageColor` with what `file` (this image's whole file, or its first bytes) says.
    public mutating func manageColor(of file: [UInt8], _ handling: ColorHandling) {
        manageColor(ColorProfile.read(file, format: format), handling)
    }
}

extension PixelLayout {
    var cLayout: iw_layout {
        switch self {
        case .rgba: return IW_RGBA
        case .rgb: return IW_RGB
        case .gray: return IW_GRAY
        }
    }
}
