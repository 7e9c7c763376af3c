/// An image format, told from the first bytes of the data (never from Content-Type).
public enum ImageFormat: String, Sendable, CaseIterable {
    case jpeg, png, gif, webp, bmp, tiff, avif, heic, jxl

    /// Bytes needed to tell every format apart.
    public static let signatureLength = 16

    /// The format the bytes start with; nil when they match none (or are still too few).
    public static func detect(_ bytes: some Collection<UInt8>) -> ImageFormat? {
        let head = Array(bytes.prefix(signatureLength))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count && Array(head[offset..<offset + signature.count]) == signature
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("ftypavif".utf8), at: 4) || starts(Array("ftypavis".utf8), at: 4) { return .avif }
        if starts(Array("ftypheic".utf8), at: 4) || starts(Array("ftypheix".utf8), at: 4) || starts(Array("ftypmif1".utf8), at: 4) {
            return .heic
        }
        // JPEG XL: a bare codestream, or the ISO BMFF container's signature box.
        if starts([0xFF, 0x0A]) || starts([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .jxl }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts(Array("BM".utf8)) && head.count >= 14 { return .bmp }
        return nil
    }

    public var mimeType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .gif: return "image/gif"
        case .webp: return "image/webp"
        case .bmp: return "image/bmp"
        case .tiff: return "image/tiff"
        case .avif: return "image/avif"
        case .heic: return "image/heic"
        case .jxl: return "image/jxl"
        }
    }

    public var fileExtension: String {
        switch self {
        case .jpeg: return "jpg"
        default: return rawValue
        }
    }

    /// Every extension a file of this format may carry (lowercase, `fileExtension` first).
    public var fileExtensions: [String] {
        switch self {
        case .jpeg: return ["jpg", "jpeg", "jpe", "jfif"]
        case .tiff: return ["tiff", "tif"]
        case .heic: return ["heic", "heif"]
        default: return [rawValue]
        }
    }
}
