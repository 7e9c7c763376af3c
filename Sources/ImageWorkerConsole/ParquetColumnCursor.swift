import Foundation
import ImageDecoding

/// One column chunk of a Parquet row group, its values handed out one at a time: a page is read,
/// decompressed and decoded when the last one's values are used up, so a column holds one page and
/// its dictionary. Pages in any codec but LZO; definition levels (optional columns)
/// in the RLE/bit-packed hybrid; values PLAIN or dictionary-encoded (PLAIN_DICTIONARY,
/// RLE_DICTIONARY), booleans RLE too, or in a v2 writer's encodings (`ParquetEncodings`).
struct ParquetColumnCursor {
    typealias Failure = ParquetReader.Failure

    let source: ParquetReader.Source
    let column: ParquetReader.Column
    let codec: Int64
    private var offset: Int
    private let end: Int
    private var dictionary: [ParquetReader.Value] = []
    private var values: [ParquetReader.Value] = []
    private var position = 0
    static let maxPageValues = 1 << 24

    init(source: ParquetReader.Source, column: ParquetReader.Column, meta: ThriftValue) throws(Failure) {
        (self.source, self.column) = (source, column)
        codec = meta[4]?.int ?? 0
        let data = Int(meta[9]?.int ?? -1)
        let dictionary = Int(meta[11]?.int ?? -1)
        offset = dictionary > 0 && dictionary < data ? dictionary : data
        let length = Int(meta[7]?.int ?? -1)
        guard offset >= 4, offset < source.size, length > 0, length <= source.size - offset else {
            throw Failure(description: "column \"\(column.name)\": a chunk out of the file")
        }
        end = offset + length
        guard Self.codecs.contains(codec) else {
            throw Failure(description: "column \"\(column.name)\" is compressed with \(codec == 3 ? "LZO" : "codec \(codec)"): get reads every other codec")
        }
        // (The chunk's list of its pages' encodings: one it lacks is refused here, before a page.)
        if let other = (meta[2]?.list ?? []).compactMap(\.int).first(where: { !Self.encodings.contains($0) }) {
            throw Failure(description: "column \"\(column.name)\": values encoded as encoding \(other), which parquet-format does not define")
        }
    }

    /// The codecs this reader expands: UNCOMPRESSED, SNAPPY, GZIP, BROTLI, LZ4, ZSTD, LZ4_RAW
    /// (every one parquet-format defines but LZO, which no current writer makes).
    static let codecs: Set<Int64> = [0, 1, 2, 4, 5, 6, 7]
    /// The encodings it decodes: PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED (levels), the three
    /// DELTA ones, RLE_DICTIONARY, BYTE_STREAM_SPLIT: every one parquet-format defines.
    static let encodings: Set<Int64> = [0, 2, 3, 4, 5, 6, 7, 8, 9]

    /// The next row's value (`.null` for a null).
    mutating func next() throws(Failure) -> ParquetReader.Value {
        while position == values.count { try readPage() }
        defer { position += 1 }
        return values[position]
    }

    private func fail(_ what: String) -> Failure { Failure(description: "column \"\(column.name)\": \(what)") }

    private mutating func readPage() throws(Failure) {
        guard offset < end else { throw fail("fewer values than rows") }
        // The header: a few hundred bytes, more when it carries large statistics.
        var window = 512
        var header = ThriftValue.structure([:])
        var headerLength = 0
        while true {
            let bytes = try source.read(offset, min(window, end - offset))
            var at = 0
            do {
                header = try ThriftValue.structure(bytes, &at)
                headerLength = at
                break
            } catch {
                guard window < end - offset, window < 1 << 24 else { throw fail("a page header cannot be read: \(error.message)") }
                window *= 8
            }
        }
        let size = Int(header[3]?.int ?? -1)
        let expanded = Int(header[2]?.int ?? -1)
        guard size >= 0, size <= end - offset - headerLength, (0...(1 << 30)).contains(expanded) else { throw fail("a page out of its chunk") }
        let body = try source.read(offset + headerLength, size)
        offset += headerLength + size
        // A page's values, and a dictionary's, are made before they are used: bounded, whatever
        // a header says (writers put tens of thousands in a page).
        func values(_ count: Int64?) throws(Failure) -> Int {
            guard let count, (0...Int64(Self.maxPageValues)).contains(count) else {
                throw fail("a page of \(count ?? -1) values (get reads pages of up to \(Self.maxPageValues))")
            }
            return Int(count)
        }
        switch header[1]?.int {
        case 2:  // DICTIONARY_PAGE
            let data = try decompress(body[...], expanded)
            var at = data.startIndex
            dictionary = try plain(data[...], &at, count: try values(header[7]?[1]?.int ?? 0))
        case 0:  // DATA_PAGE
            guard let page = header[5] else { throw fail("a data page without its header") }
            let count = try values(page[1]?.int)
            let data = try decompress(body[...], expanded)
            var at = data.startIndex
            var defined: [Bool]?
            if column.optional {
                guard page[3]?.int == 3 else { throw fail("definition levels encoded as \(page[3]?.int ?? -1), not RLE") }
                let length = try little(data[...], &at, 4)
                guard length <= data.endIndex - at else { throw fail("definition levels past the page") }
                defined = try Self.hybrid(data[at..<at + length], width: 1, count: count).map { $0 == 1 }
                at += length
            }
            try take(data[at...], encoding: page[2]?.int ?? 0, count: count, defined: defined)
        case 3:  // DATA_PAGE_V2: levels first, never compressed
            guard let page = header[8] else { throw fail("a data page without its header") }
            let count = try values(page[1]?.int)
            let repetition = Int(page[6]?.int ?? 0)
            let definition = Int(page[5]?.int ?? 0)
            guard repetition >= 0, definition >= 0, repetition <= body.count, definition <= body.count - repetition else {
                throw fail("levels past the page")
            }
            let levels = body[repetition..<repetition + definition]
            let defined = column.optional ? try Self.hybrid(levels, width: 1, count: count).map { $0 == 1 } : nil
            let rest = body[(repetition + definition)...]
            let data = page[7]?.int == 0 ? Array(rest) : try decompress(rest, expanded - repetition - definition)
            try take(data[...], encoding: page[4]?.int ?? 0, count: count, defined: defined)
        default:
            return  // an index page: nothing of the rows
        }
    }

    /// A data page's values, nulls where `defined` says.
    private mutating func take(_ data: ArraySlice<UInt8>, encoding: Int64, count: Int, defined: [Bool]?) throws(Failure) {
        let present = defined?.reduce(0) { $0 + ($1 ? 1 : 0) } ?? count
        var at = data.startIndex
        let decoded: [ParquetReader.Value]
        switch encoding {
        case 0:
            decoded = try plain(data, &at, count: present)
        case 2, 8:
            guard let width = data.first, width <= 32 else { throw fail("dictionary indices of no width") }
            decoded = try Self.hybrid(data.dropFirst(), width: Int(width), count: present).map { index throws(Failure) in
                guard index < dictionary.count else { throw fail("a dictionary index out of range") }
                return dictionary[index]
            }
        case 3 where column.physical == 0:
            let length = try little(data, &at, 4)
            guard length <= data.endIndex - at else { throw fail("booleans past the page") }
            decoded = try Self.hybrid(data[at..<at + length], width: 1, count: present).map { .bool($0 == 1) }
        case 5, 6, 7, 9:
            decoded = try v2Values(data, encoding: encoding, count: present)
        default:
            throw fail("values encoded as \(encoding) in a column of physical type \(column.physical)")
        }
        guard let defined else {
            values = decoded
            position = 0
            return
        }
        var next = 0
        values = defined.map { present in
            guard present else { return .null }
            defer { next += 1 }
            return decoded[next]
        }
        position = 0
    }

    private func decompress(_ body: ArraySlice<UInt8>, _ expanded: Int) throws(Failure) -> [UInt8] {
        do {
            switch codec {
            case 1: return try Snappy.decompress(body, limit: max(0, expanded))
            case 2: return try Decompression.gunzip(body, size: expanded)
            case 4: return try Decompression.unbrotli(body, size: expanded)
            case 5: return try LZ4.hadoop(body, size: expanded)
            case 6: return try Decompression.unzstd(body, size: expanded)
            case 7: return try LZ4.block(body, size: expanded)
            default: return Array(body)
            }
        } catch let error as Snappy.Failure {
            throw fail(error.message)
        } catch let error as LZ4.Failure {
            throw fail(error.message)
        } catch let error as Decompression.Failure {
            throw fail(error.message)
        } catch {
            throw fail("\(error)")
        }
    }

    /// A page's values in one of the v2 writers' encodings (`ParquetEncodings`), as the column's type.
    private func v2Values(_ data: ArraySlice<UInt8>, encoding: Int64, count: Int) throws(Failure) -> [ParquetReader.Value] {
        var at = data.startIndex
        switch (encoding, column.physical) {
        case (5, 1): return try ParquetEncodings.deltas(data, &at, count: count).map { .int(Int64(Int32(truncatingIfNeeded: $0))) }
        case (5, 2): return try ParquetEncodings.deltas(data, &at, count: count).map { .int($0) }
        case (6, 6): return try ParquetEncodings.lengthPrefixed(data, &at, count: count).map { .bytes($0) }
        case (7, 6): return try ParquetEncodings.prefixShared(data, &at, count: count).map { .bytes($0) }
        case (7, 7): return try ParquetEncodings.prefixShared(data, &at, count: count).map { Self.hex($0[...]) }
        case (9, 1), (9, 2), (9, 4), (9, 5), (9, 7):
            // Put back in PLAIN's order, then read as PLAIN values are.
            let width = [1: 4, 2: 8, 4: 4, 5: 8][column.physical] ?? column.typeLength
            let joined = try ParquetEncodings.streams(data, width: width, count: count)
            var start = joined.startIndex
            return try plain(joined[...], &start, count: count)
        default: throw fail("values encoded as \(encoding) in a column of physical type \(column.physical)")
        }
    }

    /// Fixed-length bytes (INT96, FIXED_LEN_BYTE_ARRAY) as the text of their hex digits.
    private static func hex(_ bytes: ArraySlice<UInt8>) -> ParquetReader.Value {
        .bytes(Array(bytes.map { String(format: "%02x", $0) }.joined().utf8))
    }

    private func little(_ data: ArraySlice<UInt8>, _ at: inout Int, _ count: Int) throws(Failure) -> Int {
        guard count <= data.endIndex - at else { throw fail("a value past the page") }
        var value = 0
        for i in 0..<count { value |= Int(data[at + i]) << (8 * i) }
        at += count
        return value
    }

    /// `count` PLAIN values of the column's type.
    private func plain(_ data: ArraySlice<UInt8>, _ at: inout Int, count: Int) throws(Failure) -> [ParquetReader.Value] {
        var out: [ParquetReader.Value] = []
        out.reserveCapacity(count)
        switch column.physical {
        case 0:
            guard (count + 7) / 8 <= data.endIndex - at else { throw fail("booleans past the page") }
            for i in 0..<count { out.append(.bool(data[at + i / 8] >> (i % 8) & 1 == 1)) }
        case 1:
            for _ in 0..<count { out.append(.int(Int64(Int32(truncatingIfNeeded: try little(data, &at, 4))))) }
        case 2:
            for _ in 0..<count { out.append(.int(Int64(truncatingIfNeeded: try little(data, &at, 8)))) }
        case 4:
            for _ in 0..<count { out.append(.double(Double(Float(bitPattern: UInt32(truncatingIfNeeded: try little(data, &at, 4)))))) }
        case 5:
            for _ in 0..<count { out.append(.double(Double(bitPattern: UInt64(UInt(bitPattern: try little(data, &at, 8)))))) }
        case 6:
            for _ in 0..<count {
                let length = try little(data, &at, 4)
                guard length <= data.endIndex - at else { throw fail("a value past the page") }
                out.append(.bytes(Array(data[at..<at + length])))
                at += length
            }
        case 3, 7:
            // INT96 (old timestamps) and fixed-length bytes: as hex.
            let width = column.physical == 3 ? 12 : column.typeLength
            guard width >= 0, count == 0 || width <= (data.endIndex - at) / count else { throw fail("a value past the page") }
            for _ in 0..<count {
                out.append(Self.hex(data[at..<at + width]))
                at += width
            }
        default:
            throw fail("physical type \(column.physical)")
        }
        return out
    }

    /// The RLE/bit-packed hybrid: runs of one value, and groups of 8 values of `width` bits.
    static func hybrid(_ data: ArraySlice<UInt8>, width: Int, count: Int) throws(Failure) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(count)
        var at = data.startIndex
        let bytes = (width + 7) / 8
        while out.count < count {
            let header: UInt64
            do {
                header = try ThriftValue.varint(data, &at)
            } catch {
                throw Failure(description: "levels or indices end early")
            }
            // (A length as large as a varint holds is clamped, never multiplied past Int.)
            let length = Int(clamping: header >> 1)
            if header & 1 == 0 {
                guard bytes <= data.endIndex - at else { throw Failure(description: "a run past the end") }
                var value = 0
                for i in 0..<bytes { value |= Int(data[at + i]) << (8 * i) }
                at += bytes
                out += repeatElement(value, count: min(length, count - out.count))
            } else {
                let groups = length
                guard width == 0 || groups <= (data.endIndex - at) / width else { throw Failure(description: "bit-packed values past the end") }
                let taken = min(min(groups, (count - out.count + 7) / 8) * 8, count - out.count)
                out += ParquetEncodings.unpack(data[at...], width: width, count: taken).map { Int($0) }
                at += groups * width
            }
        }
        return out
    }
}
