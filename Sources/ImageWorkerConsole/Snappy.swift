/// Snappy's raw format decompressed (google/snappy's format_description.txt): what most Parquet
/// files' pages are compressed with (pyarrow's, pandas', DuckDB's and Spark's default). A varint
/// of the uncompressed length, then literals and back-references of 1, 2 or 4 offset bytes.
enum Snappy {
    struct Failure: Error {
        let message: String
    }

    /// The bytes `compressed` stands for; `limit`: the most it may expand to (what the page
    /// header says), so a corrupt length cannot ask for more.
    static func decompress(_ compressed: ArraySlice<UInt8>, limit: Int) throws(Failure) -> [UInt8] {
        var at = compressed.startIndex
        func byte() throws(Failure) -> Int {
            guard at < compressed.endIndex else { throw Failure(message: "snappy data ends early") }
            defer { at += 1 }
            return Int(compressed[at])
        }
        func little(_ count: Int) throws(Failure) -> Int {
            var value = 0
            for i in 0..<count { value |= try byte() << (8 * i) }
            return value
        }
        var length = 0
        var shift = 0
        while true {
            let next = try byte()
            length |= (next & 0x7F) << shift
            if next & 0x80 == 0 { break }
            shift += 7
            guard shift < 35 else { throw Failure(message: "a snappy length of more than 32 bits") }
        }
        guard length <= limit else { throw Failure(message: "snappy data says \(length) bytes, the page \(limit)") }
        var out: [UInt8] = []
        out.reserveCapacity(length)
        while at < compressed.endIndex {
            let tag = try byte()
            switch tag & 3 {
            case 0:
                var count = tag >> 2
                if count >= 60 { count = try little(count - 59) }
                count += 1
                guard count <= compressed.endIndex - at, out.count + count <= length else { throw Failure(message: "a snappy literal past the end") }
                out += compressed[at..<at + count]
                at += count
                continue
            case 1:
                let count = 4 + ((tag >> 2) & 7)
                try copy(count: count, offset: (tag >> 5) << 8 | (try byte()))
            case 2: try copy(count: (tag >> 2) + 1, offset: try little(2))
            default: try copy(count: (tag >> 2) + 1, offset: try little(4))
            }
        }
        guard out.count == length else { throw Failure(message: "snappy data makes \(out.count) bytes, not \(length)") }
        return out

        func copy(count: Int, offset: Int) throws(Failure) {
            guard offset > 0, offset <= out.count, out.count + count <= length else { throw Failure(message: "a snappy copy out of range") }
            // (The source may overlap what is being written: a run.)
            let start = out.count - offset
            for i in 0..<count { out.append(out[start + i]) }
        }
    }
}
