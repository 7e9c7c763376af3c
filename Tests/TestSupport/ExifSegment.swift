/// A JPEG with an EXIF orientation: an APP1 "Exif" segment (IFD0 holding only the Orientation tag,
/// in either TIFF byte order) inserted right after the SOI marker of `jpeg`.
public enum ExifSegment {
    public static func inserting(orientation: Int, littleEndian: Bool, into jpeg: [UInt8]) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: Int) -> [UInt8] { littleEndian ? u16(v & 0xFFFF) + u16(v >> 16) : u16(v >> 16) + u16(v & 0xFFFF) }
        let tiff = (littleEndian ? Array("II".utf8) : Array("MM".utf8)) + u16(42) + u32(8)
            + u16(1)  // one entry
            + u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0)  // Orientation, SHORT, 1 value
            + u32(0)  // no next IFD
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        return [0xFF, 0xD8, 0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload + jpeg.dropFirst(2)
    }
}
