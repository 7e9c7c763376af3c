import Testing

@testable import ImageDecoding

/// gzip, zlib, Zstandard and Brotli streams as Parquet writers give them (made with Python's gzip
/// and zlib, the zstd command and pyarrow's Brotli): whole, in several members or frames, and damaged, which is an error,
/// never a crash or bytes made up.
struct DecompressionTests {
    static let text = Array(String(repeating: "a page of a table, ", count: 6).utf8)
    static let gzip: [UInt8] = [
        0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x4B, 0x54, 0x28, 0x48, 0x4C, 0x4F, 0x55, 0xC8, 0x4F, 0x53, 0x48,
        0x54, 0x28, 0x49, 0x4C, 0xCA, 0x49, 0xD5, 0x01, 0x32, 0x68, 0x2A, 0x04, 0x00, 0xA7, 0x58, 0xCE, 0x30, 0x72, 0x00, 0x00, 0x00,
    ]
    static let gzipSecond: [UInt8] = [
        0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x2B, 0x4E, 0x4D, 0xCE, 0xCF, 0x4B, 0x01, 0x00, 0x69, 0x11, 0x1F,
        0xB6, 0x06, 0x00, 0x00, 0x00,
    ]
    static let zlib: [UInt8] = [
        0x78, 0x9C, 0x4B, 0x54, 0x28, 0x48, 0x4C, 0x4F, 0x55, 0xC8, 0x4F, 0x53, 0x48, 0x54, 0x28, 0x49, 0x4C, 0xCA, 0x49, 0xD5, 0x01,
        0x32, 0x68, 0x2A, 0x04, 0x00, 0x2C, 0x4A, 0x24, 0x31,
    ]
    static let zstd: [UInt8] = [
        0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58, 0xD5, 0x00, 0x00, 0x98, 0x61, 0x20, 0x70, 0x61, 0x67, 0x65, 0x20, 0x6F, 0x66, 0x20, 0x61,
        0x20, 0x74, 0x61, 0x62, 0x6C, 0x65, 0x2C, 0x20, 0x01, 0x00, 0xD9, 0xA6, 0x19, 0x06,
    ]
    static let brotli: [UInt8] = [
        0x1B, 0x71, 0x00, 0x00, 0x04, 0x6C, 0x71, 0xA4, 0x3B, 0x7F, 0x95, 0xC1, 0x17, 0x56, 0x0D, 0x04, 0x59, 0x51, 0x16, 0xE5, 0xDD,
        0x72, 0x83, 0x94, 0x39, 0x30,
    ]
    /// "second", a frame with its checksum.
    static let zstdSecond: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x04, 0x58, 0x31, 0x00, 0x00, 0x73, 0x65, 0x63, 0x6F, 0x6E, 0x64, 0x37, 0x00, 0x5E, 0x4D]

    @Test func wholeStreamsAndStreamsOfSeveralParts() throws {
        let both = Self.text + Array("second".utf8)
        #expect(try Decompression.gunzip(Self.gzip[...], size: Self.text.count) == Self.text)
        #expect(try Decompression.gunzip((Self.gzip + Self.gzipSecond)[...], size: both.count) == both)
        #expect(try Decompression.gunzip(Self.zlib[...], size: Self.text.count) == Self.text)
        #expect(try Decompression.unzstd(Self.zstd[...], size: Self.text.count) == Self.text)
        #expect(try Decompression.unzstd((Self.zstd + Self.zstdSecond)[...], size: both.count) == both)
        #expect(try Decompression.unbrotli(Self.brotli[...], size: Self.text.count) == Self.text)
        // A slice that does not start at 0, as a page's body within a read.
        #expect(try Decompression.unzstd(([0xAA] + Self.zstd).dropFirst(), size: Self.text.count) == Self.text)
    }

    @Test func aStreamOfAnotherSizeOrDamagedIsAnError() {
        for (name, stream) in [("gzip", Self.gzip), ("zlib", Self.zlib), ("zstd", Self.zstd), ("brotli", Self.brotli)] {
            let expand = { (data: ArraySlice<UInt8>, size: Int) throws(Decompression.Failure) -> [UInt8] in
                switch name {
                case "zstd": return try Decompression.unzstd(data, size: size)
                case "brotli": return try Decompression.unbrotli(data, size: size)
                default: return try Decompression.gunzip(data, size: size)
                }
            }
            #expect(throws: Decompression.Failure.self, "\(name): one byte short") { try expand(stream[...], Self.text.count - 1) }
            #expect(throws: Decompression.Failure.self, "\(name): one byte more") { try expand(stream[...], Self.text.count + 1) }
            for cut in 0..<stream.count {
                #expect(throws: Decompression.Failure.self, "\(name) cut at \(cut)") { try expand(stream[..<cut], Self.text.count) }
            }
            // A flipped byte: an error, or (where no checksum covers it) bytes of the size asked.
            for at in stream.indices {
                var damaged = stream
                damaged[at] ^= 0x5A
                if let out = try? expand(damaged[...], Self.text.count) { #expect(out.count == Self.text.count) }
            }
        }
    }
}
