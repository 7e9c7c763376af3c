/// LZ4's block format decompressed (lz4's lz4_Block_format.md): the pages of Parquet tables written
/// with LZ4_RAW (pyarrow's `lz4`), and with the older LZ4 codec, which Hadoop's writers (Spark's
/// `lz4`) frame in blocks of their own and early Arrow wrote raw. Sequences of literals and a
/// back-reference of a 2-byte offset, the last literals only.
enum LZ4 {
    struct Failure: Error {
        let message: String
    }

    /// The `size` bytes a raw block stands for.
    static func block(_ compressed: ArraySlice<UInt8>, size: Int) throws(Failure) -> [UInt8] {
        guard size >= 0 else { throw Failure(message: "an lz4 page of \(size) bytes") }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        try append(compressed, to: &out, end: size)
        guard out.count == size else { throw Failure(message: "lz4 data makes \(out.count) bytes, not \(size)") }
        return out
    }

    /// The older LZ4 codec: Hadoop's frames (each a big-endian size expanded, then big-endian
    /// sized blocks until it is made), else, as Arrow reads it, one raw block.
    static func hadoop(_ compressed: ArraySlice<UInt8>, size: Int) throws(Failure) -> [UInt8] {
        if let framed = try? framedBlocks(compressed, size: size) { return framed }
        return try block(compressed, size: size)
    }

    private static func framedBlocks(_ compressed: ArraySlice<UInt8>, size: Int) throws(Failure) -> [UInt8] {
        guard size >= 0 else { throw Failure(message: "an lz4 page of \(size) bytes") }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        var at = compressed.startIndex
        func big() throws(Failure) -> Int {
            guard compressed.endIndex - at >= 4 else { throw Failure(message: "a Hadoop frame cut short") }
            defer { at += 4 }
            return compressed[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
        }
        while at < compressed.endIndex {
            let frameEnd = out.count + (try big())
            guard frameEnd <= size else { throw Failure(message: "a Hadoop frame past the page") }
            while out.count < frameEnd {
                let length = try big()
                guard length <= compressed.endIndex - at else { throw Failure(message: "a Hadoop block past the page") }
                try append(compressed[at..<at + length], to: &out, end: frameEnd)
                at += length
            }
        }
        guard out.count == size else { throw Failure(message: "Hadoop frames make \(out.count) bytes, not \(size)") }
        return out
    }

    /// Decodes one raw block onto `out`, which it may not grow past `end`.
    private static func append(_ compressed: ArraySlice<UInt8>, to out: inout [UInt8], end: Int) throws(Failure) {
        var at = compressed.startIndex
        func length(_ start: Int) throws(Failure) -> Int {
            var total = start
            guard start == 15 else { return total }
            while true {
                guard at < compressed.endIndex else { throw Failure(message: "lz4 data ends in a length") }
                let next = Int(compressed[at])
                at += 1
                total += next
                guard total <= end else { throw Failure(message: "an lz4 length past the page") }
                if next != 255 { return total }
            }
        }
        while at < compressed.endIndex {
            let token = Int(compressed[at])
            at += 1
            let literals = try length(token >> 4)
            guard literals <= compressed.endIndex - at, literals <= end - out.count else { throw Failure(message: "lz4 literals past the end") }
            out += compressed[at..<at + literals]
            at += literals
            if at == compressed.endIndex { return }  // the last sequence: literals only
            guard compressed.endIndex - at >= 2 else { throw Failure(message: "lz4 data ends in an offset") }
            let offset = Int(compressed[at]) | Int(compressed[at + 1]) << 8
            at += 2
            let count = try length(token & 15) + 4
            guard offset > 0, offset <= out.count, count <= end - out.count else { throw Failure(message: "an lz4 copy out of range") }
            // (The source may overlap what is being written: a run.)
            let start = out.count - offset
            for i in 0..<count { out.append(out[start + i]) }
        }
    }
}
