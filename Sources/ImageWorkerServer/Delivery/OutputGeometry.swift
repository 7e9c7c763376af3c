import ImageDecoding

/// What a token asks of its image's size, read in one place: `maxPixelSize` and `maxPixelCount`
/// for the final image, `partialMaxPixelSize` for its partial images. The final image, the
/// partial ones, the decode that serves a fetch's tokens and the key two tokens share a decode
/// by all come from here.
struct OutputGeometry: Sendable, Hashable {
    /// Scale down (never up) so the longest side is at most this many pixels.
    var maxPixelSize: Int?
    /// Scale down so the image has at most this many pixels.
    var maxPixelCount: Int?
    /// Partial images no larger than this on their longest side; nil: the final image's size.
    var partialMaxPixelSize: Int?

    typealias Size = (width: Int, height: Int)

    /// The final image's size for a source of `source`'s size.
    func finalSize(of source: Size) -> Size {
        ImageResampler.fittedSize(width: source.width, height: source.height, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
    }

    /// A partial image's size: the final size, fitted into `partialMaxPixelSize` when there is one.
    func partialSize(of source: Size) -> Size {
        let final = finalSize(of: source)
        guard let partialMaxPixelSize else { return final }
        return ImageResampler.fittedSize(width: final.width, height: final.height, maxPixelSize: partialMaxPixelSize, maxPixelCount: nil)
    }

    /// What the final image's size depends on (two tokens with the same share a decode).
    var final: OutputGeometry { OutputGeometry(maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount) }

    /// Decodes `bytes` whole at the final size (JPEG by DCT scaling, no larger than needed).
    func decode(_ bytes: [UInt8], options: DecodeOptions) throws(DecodeError) -> DecodedImage {
        try ImageDecoders.decode(bytes, options: options, maxPixelSize: maxPixelSize, maxPixelCount: maxPixelCount)
    }

    /// The smallest decode that serves every one of `geometries` from a source of `source`'s
    /// size: the largest of their final sizes.
    static func decodeSize(serving geometries: [OutputGeometry], source: Size) -> Size {
        let sizes = geometries.map { $0.finalSize(of: source) }
        guard let widest = sizes.map(\.width).max(), let tallest = sizes.map(\.height).max() else { return source }
        return (widest, tallest)
    }
}
