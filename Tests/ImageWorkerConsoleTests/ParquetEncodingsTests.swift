import Testing

@testable import ImageWorkerConsole

/// The v2 writers' encodings on parquet-format's own examples (Encodings.md), encoded by hand, and
/// on streams cut short or with absurd headers: an error, never a crash or a value made up.
/// pyarrow's files in every encoding and codec are read in the Python client's tests.
struct ParquetEncodingsTests {
    /// Blocks of 128 values in 4 miniblocks, then the count and the first value (zigzag).
    static func header(count: UInt8, first: UInt8) -> [UInt8] { [0x80, 0x01, 0x04, count, first] }

    /// "7, 5, 3, 1, 2, 3, 4, 5": deltas -2, -2, -2, 1, 1, 1, 1; less the smallest, 0, 0, 0, 3, 3, 3, 3
    /// in 2 bits each.
    static let example2 = header(count: 8, first: 0x0E) + [0x03, 0x02, 0x00, 0x00, 0x00, 0xC0, 0x3F] + [UInt8](repeating: 0, count: 6)

    @Test func deltaBinaryPackedAsTheSpecificationShowsIt() throws {
        // "1, 2, 3, 4, 5": a smallest delta of 1, every miniblock 0 bits wide (no bytes).
        var at = 0
        #expect(try ParquetEncodings.deltas(Self.header(count: 5, first: 0x02) + [0x02, 0, 0, 0, 0], &at, count: 5) == [1, 2, 3, 4, 5])
        at = 0
        #expect(try ParquetEncodings.deltas(Self.example2[...], &at, count: 8) == [7, 5, 3, 1, 2, 3, 4, 5])
        #expect(at == Self.example2.count, "left after the last miniblock read")
        // One value: the header alone.
        at = 0
        #expect(try ParquetEncodings.deltas(Self.header(count: 1, first: 0x03)[...], &at, count: 1) == [-2])
    }

    @Test func byteArraysByLengthAndBySharedPrefix() throws {
        // "Hello", "World", "Foobar", "ABCDEF": lengths 5, 5, 6, 6 (deltas 0, 1, 0 in 1 bit), then the bytes.
        let lengths = Self.header(count: 4, first: 0x0A) + [0x00, 0x01, 0, 0, 0, 0x02, 0, 0, 0]
        var at = 0
        let words = try ParquetEncodings.lengthPrefixed((lengths + Array("HelloWorldFoobarABCDEF".utf8))[...], &at, count: 4)
        #expect(words.map { String(decoding: $0, as: UTF8.self) } == ["Hello", "World", "Foobar", "ABCDEF"])
        // "axis", "axle", "babble", "babyhood": prefixes 0, 2, 0, 3 and suffixes "axis", "le",
        // "babble", "yhood" (lengths 4, 2, 6, 5), each list as deltas in 3 bits.
        let prefixes = Self.header(count: 4, first: 0x00) + [0x03, 0x03, 0, 0, 0, 0x44, 0x01] + [UInt8](repeating: 0, count: 10)
        let suffixes = Self.header(count: 4, first: 0x08) + [0x03, 0x03, 0, 0, 0, 0x70, 0x00] + [UInt8](repeating: 0, count: 10)
        at = 0
        let shared = try ParquetEncodings.prefixShared((prefixes + suffixes + Array("axislebabbleyhood".utf8))[...], &at, count: 4)
        #expect(shared.map { String(decoding: $0, as: UTF8.self) } == ["axis", "axle", "babble", "babyhood"])
        // A prefix longer than the value before it is refused.
        let tooLong = Self.header(count: 1, first: 0x02)
        at = 0
        #expect(throws: ParquetReader.Failure.self) {
            try ParquetEncodings.prefixShared((tooLong + Self.header(count: 1, first: 0x02) + Array("ab".utf8))[...], &at, count: 1)
        }
    }

    @Test func byteStreamSplitFloats() throws {
        // 1.0 and 2.5 as floats (00 00 80 3F, 00 00 20 40), their first bytes, then their second...
        let data: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x80, 0x20, 0x3F, 0x40]
        #expect(try ParquetEncodings.streams(data[...], width: 4, count: 2) == [0x00, 0x00, 0x80, 0x3F] + [0x00, 0x00, 0x20, 0x40])
        #expect(throws: ParquetReader.Failure.self) { try ParquetEncodings.streams(data[...], width: 4, count: 3) }
    }

    @Test func cutOrAbsurdStreamsAreErrors() {
        for cut in 0..<Self.example2.count {
            var at = 0
            #expect(throws: ParquetReader.Failure.self, "cut at \(cut)") { try ParquetEncodings.deltas(Self.example2[..<cut], &at, count: 8) }
        }
        let absurd: [[UInt8]] = [
            [0x00, 0x04, 0x08, 0x0E],  // blocks of 0 values
            [0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x04, 0x08, 0x0E],  // blocks of 2^32 - 1
            [0x80, 0x01, 0x00, 0x08, 0x0E],  // no miniblocks
            [0x80, 0x01, 0x03, 0x08, 0x0E],  // 128 values in 3 miniblocks
            Self.header(count: 9, first: 0x0E) + Self.example2.dropFirst(5),  // a count other than the page's
            Self.header(count: 8, first: 0x0E) + [0x03, 0x41, 0, 0, 0] + [UInt8](repeating: 0, count: 300),  // 65 bits wide
        ]
        for stream in absurd {
            var at = 0
            #expect(throws: ParquetReader.Failure.self, "\(stream.prefix(12))") { try ParquetEncodings.deltas(stream[...], &at, count: 8) }
        }
    }
}
