internal import CImageCodecs

/// AVIF with libavif (and the AV1 codec it was built with: dav1d or libaom): still images and the
/// first frame of a sequence, 8-, 10- and 12-bit samples to 8 bits, alpha. The container's
/// rotation and mirroring (`irot`, `imir`) are reported as an EXIF orientation, applied like a
/// JPEG's with `applyOrientation`. AVIF has no partial images: a progressive download buffers the
/// file and decodes it when complete (`BufferedImageDecoder`).
public enum AVIFDecoder {
    /// A whole AVIF file's first image in the options' layout.
    public static func decode(_ data: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        var info = iw_avif_info()
        var image = iw_image()
        let status = data.withUnsafeBufferPointer {
            iw_avif_header($0.baseAddress, $0.count, options.maxPixels, UInt32(clamping: options.maxFrames), &info, &image)
        }
        guard status == 0 else { throw ImageDecoders.error(image, format: "AVIF") }
        let profile = takeProfile(&info)
        let (width, height) = (Int(info.width), Int(info.height))
        // Alpha is decoded only when asked for and present; otherwise RGB (grey from it).
        let channels = options.layout == .rgba && info.has_alpha != 0 ? 4 : 3
        let pixels = try ImageDecoders.filled(width * height * channels, format: "AVIF") { buffer, result in
            data.withUnsafeBufferPointer {
                iw_avif_decode_into($0.baseAddress, $0.count, Int32(channels), info.width, info.height, buffer, &result)
            }
        }
        var decoded = DecodedImage(
            width: width, height: height, layout: channels == 4 ? .rgba : .rgb, pixels: pixels, orientation: Int(info.orientation),
            format: .avif, animation: Animation.of(frames: Int(info.frame_count), loops: nil))
        // Before any conversion to gray: its luma is the sRGB values'.
        decoded.manageColor(profile, options.colorProfile)
        return decoded.converted(to: options.layout)
    }

    /// What a parsed container's colr box says of its colours: an ICC profile (its copy freed
    /// here), or colour primaries and a transfer curve.
    static func takeProfile(_ info: inout iw_avif_info) -> ColorProfile {
        guard let icc = info.icc else { return ColorProfile(icc: nil, cicp: (Int(info.color_primaries), Int(info.transfer))) }
        defer { iw_free(icc) }
        info.icc = nil
        return ColorProfile(icc: Array(UnsafeBufferPointer(start: icc, count: info.icc_length)))
    }
}
