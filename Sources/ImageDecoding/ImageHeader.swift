/// What a file's header says, read without decoding: the format its signature names and, for
/// every format the worker knows, the stored size. Used to verify `original` deliveries.
public struct ImageHeader: Sendable, Equatable {
    public var format: ImageFormat
    public var width: Int
    public var height: Int

    public init(format: ImageFormat, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
    }

    public enum Failure: Error, Sendable, Equatable {
        /// No known image signature: what the bytes start with, for the message.
        case notAnImage(String)
        /// The signature of `format`, but no header that gives a size.
        case badHeader(ImageFormat)
    }

    /// The header of `bytes` (a whole file).
    public static func read(_ bytes: [UInt8]) -> Result<ImageHeader, Failure> {
        guard let format = ImageFormat.detect(bytes) else { return .failure(.notAnImage(describe(bytes))) }
        let size: (Int, Int)?
        switch format {
        case .jpeg, .png: size = ImageDecoders.probeSize(bytes)
        case .gif: size = bytes.count >= 10 ? (le16(bytes, 6), le16(bytes, 8)) : nil
        case .webp: size = webp(bytes)
        case .bmp: size = bmp(bytes)
        case .tiff: size = tiff(bytes)
        case .avif, .heic: size = isobmff(bytes)
        case .jxl: size = JXLDecoder.probe(bytes).map { ($0.width, $0.height) }
        }
        guard let (width, height) = size, width > 0, height > 0 else { return .failure(.badHeader(format)) }
        return .success(ImageHeader(format: format, width: width, height: height))
    }

    /// The first bytes as a person would recognise them: `"<!DOCTYPE html>…"`, or hex.
    static func describe(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "an empty body" }
        let head = bytes.prefix(16)
        if head.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            let text = String(decoding: head.map { $0 < 0x20 ? 0x20 : $0 }, as: UTF8.self)
            return "text starting \"\(text)\(bytes.count > 16 ? "…" : "")\""
        }
        let digits = Array("0123456789abcdef")
        return "bytes starting " + head.prefix(8).map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined(separator: " ")
    }

    private static func le16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
    private static func le24(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 }
    private static func le32(_ b: [UInt8], _ i: Int) -> Int { le16(b, i) | le16(b, i + 2) << 16 }
    private static func be16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    private static func be32(_ b: [UInt8], _ i: Int) -> Int { be16(b, i) << 16 | be16(b, i + 2) }

    /// VP8 (lossy), VP8L (lossless) or VP8X (extended) first chunk.
    static func webp(_ b: [UInt8]) -> (Int, Int)? {
        guard b.count >= 25 else { return nil }
        let chunk = String(decoding: b[12..<16], as: UTF8.self)
        switch chunk {
        case "VP8 ":
            // A key frame: start code 9d 01 2a, then 14-bit width and height.
            guard b.count >= 30, b[23] == 0x9D, b[24] == 0x01, b[25] == 0x2A else { return nil }
            return (le16(b, 26) & 0x3FFF, le16(b, 28) & 0x3FFF)
        case "VP8L":
            guard b[20] == 0x2F else { return nil }
            let bits = le32(b, 21)
            return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            guard b.count >= 30 else { return nil }
            return (le24(b, 24) + 1, le24(b, 27) + 1)
        default:
            return nil
        }
    }

    /// BITMAPCOREHEADER (12 bytes: 16-bit sides) or a later info header (signed 32-bit sides; a
    /// negative height means rows top down).
    static func bmp(_ b: [UInt8]) -> (Int, Int)? {
        guard b.count >= 26 else { return nil }
        let headerSize = le32(b, 14)
        if headerSize == 12 { return (le16(b, 18), le16(b, 20)) }
        guard headerSize >= 40 else { return nil }
        let width = Int(Int32(truncatingIfNeeded: le32(b, 18)))
        let height = Int(Int32(truncatingIfNeeded: le32(b, 22)))
        return (width, abs(height))
    }

    /// ImageWidth (256) and ImageLength (257) of the first IFD.
    static func tiff(_ b: [UInt8]) -> (Int, Int)? {
        guard b.count >= 8 else { return nil }
        let little = b[0] == 0x49
        func u16(_ i: Int) -> Int { little ? le16(b, i) : be16(b, i) }
        func u32(_ i: Int) -> Int { little ? le32(b, i) : be32(b, i) }
        let ifd = u32(4)
        guard ifd >= 8, ifd + 2 <= b.count else { return nil }
        let count = u16(ifd)
        var width: Int?
        var height: Int?
        for n in 0..<count {
            let entry = ifd + 2 + n * 12
            guard entry + 12 <= b.count else { break }
            let tag = u16(entry)
            let type = u16(entry + 2)
            let value = type == 3 ? u16(entry + 8) : u32(entry + 8)  // SHORT or LONG
            if tag == 256 { width = value }
            if tag == 257 { height = value }
        }
        guard let width, let height else { return nil }
        return (width, height)
    }

    /// The first `ispe` (image spatial extents) property of an AVIF or HEIF file: meta → iprp →
    /// ipco → ispe.
    static func isobmff(_ b: [UInt8]) -> (Int, Int)? {
        func boxes(_ start: Int, _ end: Int) -> [(type: String, body: Range<Int>)] {
            var found: [(String, Range<Int>)] = []
            var at = start
            while at + 8 <= end {
                var size = be32(b, at)
                var header = 8
                if size == 1 {
                    guard at + 16 <= end else { break }
                    size = be32(b, at + 12)  // a 64-bit size: the low half (headers are small)
                    header = 16
                } else if size == 0 {
                    size = end - at
                }
                guard size >= header, at + size <= end else { break }
                found.append((String(decoding: b[(at + 4)..<(at + 8)], as: UTF8.self), (at + header)..<(at + size)))
                at += size
            }
            return found
        }
        guard let meta = boxes(0, b.count).first(where: { $0.type == "meta" }), meta.body.count > 4,
            let iprp = boxes(meta.body.lowerBound + 4, meta.body.upperBound).first(where: { $0.type == "iprp" }),
            let ipco = boxes(iprp.body.lowerBound, iprp.body.upperBound).first(where: { $0.type == "ipco" }),
            let ispe = boxes(ipco.body.lowerBound, ipco.body.upperBound).first(where: { $0.type == "ispe" }),
            ispe.body.count >= 12
        else { return nil }
        return (be32(b, ispe.body.lowerBound + 4), be32(b, ispe.body.lowerBound + 8))
    }
}
