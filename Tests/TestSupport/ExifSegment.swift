/// Files with an EXIF orientation, built by tests: a TIFF block whose IFD0 holds only the
/// Orientation tag (either TIFF byte order), put where each format keeps it.
public enum ExifSegment {
    /// The TIFF block (what follows "Exif\0\0" in a JPEG's APP1 segment).
    public static func tiff(orientation: Int, littleEndian: Bool) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: Int) -> [UInt8] { littleEndian ? u16(v & 0xFFFF) + u16(v >> 16) : u16(v >> 16) + u16(v & 0xFFFF) }
        return (littleEndian ? Array("II".utf8) : Array("MM".utf8)) + u16(42) + u32(8)
            + u16(1)  // one entry
            + u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0)  // Orientation, SHORT, 1 value
            + u32(0)  // no next IFD
    }

    /// `jpeg` with an APP1 "Exif" segment right after its SOI marker.
    public static func inserting(orientation: Int, littleEndian: Bool, into jpeg: [UInt8]) -> [UInt8] {
        let payload = Array("Exif".utf8) + [0, 0] + tiff(orientation: orientation, littleEndian: littleEndian)
        let length = payload.count + 2
        return [0xFF, 0xD8, 0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload + jpeg.dropFirst(2)
    }

    /// `png` with an `eXIf` chunk holding `block`, before its first IDAT or right before IEND.
    public static func png(_ png: [UInt8], block: [UInt8], afterImageData: Bool) -> [UInt8] {
        let chunk = PNGChunk.make("eXIf", block)
        var at = 8
        while at + 8 <= png.count {
            let length = png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: png[at + 4..<at + 8], as: UTF8.self)
            if type == (afterImageData ? "IEND" : "IDAT") { break }
            at += length + 12
        }
        return Array(png[..<at]) + chunk + png[at...]
    }

    /// A simple (`VP8 ` or `VP8L`) WebP of `width` x `height` made extended: a `VP8X` chunk
    /// announcing EXIF (and alpha when `alpha`), its image chunk, then an `EXIF` chunk holding
    /// `block`, as libwebp's muxer writes them.
    public static func webp(_ webp: [UInt8], width: Int, height: Int, alpha: Bool = false, block: [UInt8]) -> [UInt8] {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
        func le24(_ v: Int) -> [UInt8] { (0..<3).map { UInt8(v >> (8 * $0) & 0xFF) } }
        let vp8x = Array("VP8X".utf8) + le32(10) + [alpha ? 0x18 : 0x08, 0, 0, 0] + le24(width - 1) + le24(height - 1)
        let exif = Array("EXIF".utf8) + le32(block.count) + block + (block.count % 2 == 1 ? [0] : [])
        let chunks = vp8x + webp[12...] + exif
        return Array("RIFF".utf8) + le32(4 + chunks.count) + Array("WEBP".utf8) + chunks
    }
}
