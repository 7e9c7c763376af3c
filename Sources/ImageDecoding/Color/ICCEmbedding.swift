internal import CImageCodecs

/// An ICC profile put into an encoded file where its format keeps one, so that a file written
/// with `colorProfile: "keep"` still says what its values mean: JPEG APP2 "ICC_PROFILE" segments
/// (after the JFIF segment), a PNG iCCP chunk (after IHDR), a WebP ICCP chunk (an extended file's,
/// after VP8X; a simple file is made extended).
enum ICCEmbedding {
    static func embedding(_ icc: [UInt8], in file: [UInt8], format: ImageFormat) -> [UInt8] {
        guard !icc.isEmpty else { return file }
        switch format {
        case .jpeg: return jpeg(icc, file)
        case .png: return png(icc, file)
        case .webp: return webp(icc, file)
        default: return file
        }
    }

    /// At most 255 segments of 65,519 bytes of profile each (ICC.1 annex B.4).
    static func jpeg(_ icc: [UInt8], _ file: [UInt8]) -> [UInt8] {
        let piece = 65_519
        let count = (icc.count + piece - 1) / piece
        guard count <= 255, file.count >= 4, file[0] == 0xFF, file[1] == 0xD8 else { return file }
        var at = 2
        if file[2] == 0xFF, file[3] == 0xE0, file.count >= 6 { at = 4 + (Int(file[4]) << 8 | Int(file[5])) }
        guard at <= file.count else { return file }
        var out = Array(file[0..<at])
        out.reserveCapacity(file.count + icc.count + count * 18)
        for i in 0..<count {
            let chunk = icc[(i * piece)..<min(icc.count, (i + 1) * piece)]
            let length = 2 + 14 + chunk.count
            out += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)]
            out += Array("ICC_PROFILE".utf8) + [0, UInt8(i + 1), UInt8(count)]
            out += chunk
        }
        out += file[at...]
        return out
    }

    static func png(_ icc: [UInt8], _ file: [UInt8]) -> [UInt8] {
        let afterHeader = 8 + 25  // the signature, then IHDR (13 bytes of data)
        guard file.count > afterHeader, file[12..<16].elementsEqual("IHDR".utf8) else { return file }
        var chunk: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard icc.withUnsafeBufferPointer({ iw_png_iccp_chunk($0.baseAddress, $0.count, &chunk, &length) }) == 0, let chunk else { return file }
        defer { iw_free(chunk) }
        return Array(file[0..<afterHeader]) + Array(UnsafeBufferPointer(start: chunk, count: length)) + file[afterHeader...]
    }

    static func webp(_ icc: [UInt8], _ file: [UInt8]) -> [UInt8] {
        guard file.count >= 30, file[0..<4].elementsEqual("RIFF".utf8), file[8..<12].elementsEqual("WEBP".utf8) else { return file }
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        func le24(_ v: Int) -> [UInt8] { Array(le32(v).prefix(3)) }
        let kind = String(decoding: file[12..<16], as: UTF8.self)
        var iccp = Array("ICCP".utf8) + le32(icc.count) + icc
        if icc.count % 2 == 1 { iccp.append(0) }
        var body: [UInt8]
        if kind == "VP8X" {
            body = Array(file[12..<30]) + iccp + file[30...]
            body[8] |= 0x20
        } else {
            guard let (width, height) = ImageHeader.webp(file), width > 0, height > 0 else { return file }
            // A lossless image says in its header whether it uses alpha; a simple lossy one has none.
            let alpha: UInt8 = kind == "VP8L" && file.count > 24 && file[24] & 0x10 != 0 ? 0x10 : 0
            let vp8x = Array("VP8X".utf8) + le32(10) + [0x20 | alpha, 0, 0, 0] + le24(width - 1) + le24(height - 1)
            body = vp8x + iccp + file[12...]
        }
        return Array("RIFF".utf8) + le32(4 + body.count) + Array("WEBP".utf8) + body
    }
}
