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

    public init(width: Int, height: Int, layout: PixelLayout, pixels: [UInt8], orientation: Int = 1, format: ImageFormat) {
        precondition(pixels.count == width * height * layout.channels, "pixel buffer does not match the size")
        self.width = width
        self.height = height
        self.layout = layout
        self.pixels = pixels
        self.orientation = orientation
        self.format = format
    }

    public var stride: Int { width * layout.channels }

    /// The same image in another layout: RGBA→RGB drops alpha, colour→gray uses BT.601 luma
    /// (as libjpeg does), gray→colour repeats the value, and added alpha is opaque.
    public func converted(to target: PixelLayout) -> DecodedImage {
        guard target != layout else { return self }
        var out = [UInt8](repeating: 255, count: width * height * target.channels)
        Self.convertRow(pixels, from: layout, into: &out, target)
        return DecodedImage(width: width, height: height, layout: target, pixels: out, orientation: orientation, format: format)
    }

    /// Converts the pixels of `input` (any number of them) from one layout to another.
    static func convertRow(_ input: [UInt8], from layout: PixelLayout, into output: inout [UInt8], _ target: PixelLayout) {
        input.withUnsafeBufferPointer { convertRow($0, from: layout, into: &output, target) }
    }

    /// `convertRow` of pixels lent in place (a decoder's row), without copying them first.
    static func convertRow(_ src: UnsafeBufferPointer<UInt8>, from layout: PixelLayout, into output: inout [UInt8], _ target: PixelLayout) {
        let inC = layout.channels
        let outC = target.channels
        let count = src.count / inC
        output.withUnsafeMutableBufferPointer { dst in
            for i in 0..<count {
                let s = i * inC
                let d = i * outC
                if target == .gray {
                    let r = UInt32(src[s]), g = UInt32(src[s + 1]), b = UInt32(src[s + 2])
                    dst[d] = UInt8((r * 19595 + g * 38470 + b * 7471 + 32768) >> 16)
                } else if layout == .gray {
                    dst[d] = src[s]
                    dst[d + 1] = src[s]
                    dst[d + 2] = src[s]
                    if outC == 4 { dst[d + 3] = 255 }
                } else {
                    dst[d] = src[s]
                    dst[d + 1] = src[s + 1]
                    dst[d + 2] = src[s + 2]
                    if outC == 4 { dst[d + 3] = 255 }
                }
            }
        }
    }
}

/// Why decoding failed.
public enum DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The data is not a valid image (or is 0×0).
    case corrupt(String)
    /// The data ends before the image does.
    case truncated(String)
    /// A valid image of a kind this worker does not decode (GIF, WebP, 12-bit JPEG…).
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

    public init() {}
}
