/// The value encodings of Parquet's v2 writers (parquet-format's Encodings.md), which DuckDB,
/// parquet-mr and pyarrow write when asked: DELTA_BINARY_PACKED (integers as deltas from the last,
/// bit-packed in miniblocks), DELTA_LENGTH_BYTE_ARRAY (the lengths so, then the bytes),
/// DELTA_BYTE_ARRAY (each value as its prefix shared with the last, and the rest) and
/// BYTE_STREAM_SPLIT (each byte of the values in a stream of its own). Every count and width is
/// checked against what the page holds before anything is made of it.
enum ParquetEncodings {
    typealias Failure = ParquetReader.Failure

    /// `count` integers encoded DELTA_BINARY_PACKED from `at`, which is left after the last
    /// miniblock read (where DELTA_LENGTH_BYTE_ARRAY's bytes begin).
    static func deltas(_ data: ArraySlice<UInt8>, _ at: inout Int, count: Int) throws(Failure) -> [Int64] {
        func varint() throws(Failure) -> UInt64 {
            do {
                return try ThriftValue.varint(data, &at)
            } catch {
                throw Failure(description: "delta-encoded values end early")
            }
        }
        func zigzag() throws(Failure) -> Int64 { ThriftValue.zigzag(try varint()) }
        let blockSize = try varint(), miniblocks = try varint()
        let total = try varint()
        guard blockSize > 0, blockSize % 128 == 0, blockSize <= 1 << 20, miniblocks > 0, blockSize % miniblocks == 0,
            (blockSize / miniblocks) % 32 == 0, total == UInt64(count)
        else { throw Failure(description: "a delta-encoded header of blocks of \(blockSize) in \(miniblocks) for \(total) values") }
        var out: [Int64] = []
        out.reserveCapacity(count)
        var last = try zigzag()
        if count > 0 { out.append(last) }
        let perMiniblock = Int(blockSize / miniblocks)
        while out.count < count {
            let minimum = try zigzag()
            guard Int(miniblocks) <= data.endIndex - at else { throw Failure(description: "delta-encoded widths past the page") }
            let widths = data[at..<at + Int(miniblocks)]
            at += Int(miniblocks)
            for width in widths where out.count < count {
                guard width <= 64 else { throw Failure(description: "a delta-encoded width of \(width) bits") }
                let bytes = perMiniblock * Int(width) / 8
                guard bytes <= data.endIndex - at else { throw Failure(description: "delta-encoded values past the page") }
                for packed in unpack(data[at..<at + bytes], width: Int(width), count: min(perMiniblock, count - out.count)) {
                    last = last &+ minimum &+ Int64(bitPattern: packed)
                    out.append(last)
                }
                at += bytes
            }
        }
        return out
    }

    /// `count` byte strings encoded DELTA_LENGTH_BYTE_ARRAY: their lengths as deltas, then their bytes.
    static func lengthPrefixed(_ data: ArraySlice<UInt8>, _ at: inout Int, count: Int) throws(Failure) -> [[UInt8]] {
        let lengths = try deltas(data, &at, count: count)
        var out: [[UInt8]] = []
        out.reserveCapacity(count)
        for length in lengths {
            guard length >= 0, length <= data.endIndex - at else { throw Failure(description: "a value past the page") }
            out.append(Array(data[at..<at + Int(length)]))
            at += Int(length)
        }
        return out
    }

    /// `count` byte strings encoded DELTA_BYTE_ARRAY: each the first bytes of the one before (their
    /// number as deltas) followed by its own (DELTA_LENGTH_BYTE_ARRAY).
    static func prefixShared(_ data: ArraySlice<UInt8>, _ at: inout Int, count: Int) throws(Failure) -> [[UInt8]] {
        let prefixes = try deltas(data, &at, count: count)
        let suffixes = try lengthPrefixed(data, &at, count: count)
        var out: [[UInt8]] = []
        out.reserveCapacity(count)
        var last: [UInt8] = []
        for (prefix, suffix) in zip(prefixes, suffixes) {
            guard prefix >= 0, prefix <= last.count else { throw Failure(description: "a shared prefix longer than the value before") }
            last = Array(last[..<Int(prefix)]) + suffix
            out.append(last)
        }
        return out
    }

    /// `count` values of `width` bytes encoded BYTE_STREAM_SPLIT, put back together one after the
    /// other: the bytes PLAIN would have given.
    static func streams(_ data: ArraySlice<UInt8>, width: Int, count: Int) throws(Failure) -> [UInt8] {
        guard width > 0, count == 0 || width <= data.count / count else { throw Failure(description: "split values past the page") }
        let start = data.startIndex
        return (0..<count).flatMap { i in (0..<width).map { data[start + $0 * count + i] } }
    }

    /// `count` values of `width` bits, least significant bit first (as the hybrid's bit-packed runs).
    static func unpack(_ data: ArraySlice<UInt8>, width: Int, count: Int) -> [UInt64] {
        var out: [UInt64] = []
        out.reserveCapacity(count)
        var bit = 0
        for _ in 0..<count {
            var value: UInt64 = 0
            var got = 0
            while got < width {
                let shift = bit & 7
                let take = min(8 - shift, width - got)
                value |= UInt64((data[data.startIndex + (bit >> 3)] >> shift) & UInt8(truncatingIfNeeded: (1 << take) - 1)) << got
                (got, bit) = (got + take, bit + take)
            }
            out.append(value)
        }
        return out
    }
}
