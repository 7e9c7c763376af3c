/// The image format a byte stream starts with, from its signature (never from Content-Type).
enum ImageSignature {
    static func mimeType(of bytes: some Collection<UInt8>) -> String? {
        let head = Array(bytes.prefix(16))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count && Array(head[offset..<offset + signature.count]) == signature
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("ftypavif".utf8), at: 4) || starts(Array("ftypavis".utf8), at: 4) { return "image/avif" }
        if starts(Array("ftypheic".utf8), at: 4) || starts(Array("ftypheix".utf8), at: 4) { return "image/heic" }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "image/tiff" }
        if starts(Array("BM".utf8)) && head.count >= 14 { return "image/bmp" }
        return nil
    }

    static func fileExtension(forMimeType mime: String?) -> String? {
        switch mime {
        case "image/jpeg": return "jpg"
        case "image/png": return "png"
        case "image/gif": return "gif"
        case "image/webp": return "webp"
        case "image/avif": return "avif"
        case "image/heic": return "heic"
        case "image/tiff": return "tiff"
        case "image/bmp": return "bmp"
        case "image/svg+xml": return "svg"
        default: return nil
        }
    }
}
