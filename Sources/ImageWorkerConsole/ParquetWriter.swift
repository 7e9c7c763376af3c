import Foundation
import ImageWorkerServer

/// An Apache Parquet file of flat, nullable columns, written a row group at a time: what a
/// shard's `00000.parquet` is (img2dataset's readers, pyarrow, DuckDB and Spark open it). Each
/// column chunk is one v1 data page, its definition levels bit-packed (RLE/bit-packing hybrid,
/// width 1), its values PLAIN, uncompressed (images do not compress, metadata is small); the
/// footer is Thrift's compact protocol (`ThriftCompactWriter`). The same rows give the same bytes.
struct ParquetWriter {
    enum ColumnType {
        /// UTF-8 text (BYTE_ARRAY annotated UTF8).
        case string
        /// Raw bytes (BYTE_ARRAY): the image.
        case binary
        case int32
        case int64
    }

    struct Column: Equatable {
        let name: String
        let type: ColumnType
    }

    enum Value {
        case string(String)
        case bytes([UInt8])
        case int(Int64)
    }

    /// One buffered column chunk: its non-null values, PLAIN-encoded, and which rows have one.
    private struct Chunk {
        var values: [UInt8] = []
        var defined: [Bool] = []
    }

    private struct ChunkPlace {
        let offset: Int64
        let size: Int64
    }

    let columns: [Column]
    private let fd: Int32
    private var chunks: [Chunk]
    private var rowsBuffered = 0
    private var offset: Int64 = 0
    private var rowGroups: [(rows: Int, places: [ChunkPlace])] = []
    /// A row group is written when its buffered values reach this many bytes (and at the end).
    private let rowGroupBytes: Int
    private var buffered = 0

    /// A file written at `fd`, from its start (nothing is written before the first row group).
    init(fd: Int32, columns: [Column], rowGroupBytes: Int = 64 << 20) {
        (self.fd, self.columns, self.rowGroupBytes) = (fd, columns, rowGroupBytes)
        chunks = Array(repeating: Chunk(), count: columns.count)
    }

    /// One row, a value (or nil) per column in order. False when a row group had to be written
    /// and the write failed (errno says why).
    mutating func append(_ row: [Value?]) -> Bool {
        precondition(row.count == columns.count, "a Parquet row has one value per column")
        for (i, value) in row.enumerated() {
            chunks[i].defined.append(value != nil)
            guard let value else { continue }
            let before = chunks[i].values.count
            switch (columns[i].type, value) {
            case (.string, .string(let text)): Self.plain(Array(text.utf8), into: &chunks[i].values)
            case (.binary, .bytes(let bytes)): Self.plain(bytes, into: &chunks[i].values)
            case (.string, .bytes(let bytes)): Self.plain(bytes, into: &chunks[i].values)
            case (.int32, .int(let number)): Self.little(UInt64(UInt32(truncatingIfNeeded: number)), bytes: 4, into: &chunks[i].values)
            case (.int64, .int(let number)): Self.little(UInt64(bitPattern: number), bytes: 8, into: &chunks[i].values)
            default:
                chunks[i].defined[chunks[i].defined.count - 1] = false  // a value of another type: null
            }
            buffered += chunks[i].values.count - before
        }
        rowsBuffered += 1
        return buffered < rowGroupBytes || flush()
    }

    /// The buffered rows as a row group.
    private mutating func flush() -> Bool {
        guard rowsBuffered > 0 else { return true }
        if offset == 0, !write(Array("PAR1".utf8)) { return false }
        var places: [ChunkPlace] = []
        for i in columns.indices {
            let page = Self.page(chunks[i], rows: rowsBuffered)
            let start = offset
            guard write(page.header), write(page.levels), write(chunks[i].values) else { return false }
            places.append(ChunkPlace(offset: start, size: offset - start))
            chunks[i] = Chunk()
        }
        rowGroups.append((rowsBuffered, places))
        rowsBuffered = 0
        buffered = 0
        return true
    }

    /// The last row group and the footer. False when a write failed.
    mutating func finish() -> Bool {
        guard flush(), offset > 0 || write(Array("PAR1".utf8)) else { return false }
        let footer = self.footer()
        var length: [UInt8] = []
        Self.little(UInt64(footer.count), bytes: 4, into: &length)
        return write(footer) && write(length) && write(Array("PAR1".utf8))
    }

    /// A data page's header and its definition levels (with their length before them).
    private static func page(_ chunk: Chunk, rows: Int) -> (header: [UInt8], levels: [UInt8]) {
        // The levels as one bit-packed run: groups of 8 values, the first in the lowest bit.
        var packed = [UInt8](repeating: 0, count: (rows + 7) / 8)
        for (row, defined) in chunk.defined.enumerated() where defined { packed[row / 8] |= 1 << (row % 8) }
        var run: [UInt8] = []
        ThriftCompactWriter.varint(UInt64(packed.count) << 1 | 1, into: &run)
        run += packed
        var levels: [UInt8] = []
        little(UInt64(run.count), bytes: 4, into: &levels)
        levels += run
        var thrift = ThriftCompactWriter()
        let size = Int32(levels.count + chunk.values.count)
        thrift.i32(1, 0)  // DATA_PAGE
        thrift.i32(2, size)
        thrift.i32(3, size)
        thrift.structure(5) { page in
            page.i32(1, Int32(rows))
            page.i32(2, 0)  // PLAIN
            page.i32(3, 3)  // RLE (the hybrid)
            page.i32(4, 3)
        }
        return (thrift.finish(), levels)
    }

    private func footer() -> [UInt8] {
        var thrift = ThriftCompactWriter()
        thrift.i32(1, 1)
        thrift.list(2, of: .structure, count: columns.count + 1)
        thrift.element { root in
            root.string(4, "schema")
            root.i32(5, Int32(columns.count))
        }
        for column in columns {
            thrift.element { element in
                element.i32(1, Self.physical(column.type))
                element.i32(3, 1)  // OPTIONAL
                element.string(4, column.name)
                if column.type == .string { element.i32(6, 0) }  // UTF8
            }
        }
        thrift.i64(3, Int64(rowGroups.reduce(0) { $0 + $1.rows }))
        thrift.list(4, of: .structure, count: rowGroups.count)
        for group in rowGroups {
            thrift.element { row in
                row.list(1, of: .structure, count: columns.count)
                for (column, place) in zip(columns, group.places) {
                    row.element { chunk in
                        chunk.i64(2, place.offset)
                        chunk.structure(3) { meta in
                            meta.i32(1, Self.physical(column.type))
                            meta.list(2, of: .i32, count: 2)
                            meta.element(Int32(0))  // PLAIN
                            meta.element(Int32(3))  // RLE
                            meta.list(3, of: .binary, count: 1)
                            meta.element(column.name)
                            meta.i32(4, 0)  // UNCOMPRESSED
                            meta.i64(5, Int64(group.rows))
                            meta.i64(6, place.size)
                            meta.i64(7, place.size)
                            meta.i64(9, place.offset)
                        }
                    }
                }
                row.i64(2, group.places.reduce(0) { $0 + $1.size })
                row.i64(3, Int64(group.rows))
            }
        }
        thrift.string(6, "image-worker")
        return thrift.finish()
    }

    private static func physical(_ type: ColumnType) -> Int32 {
        switch type {
        case .int32: return 1
        case .int64: return 2
        case .string, .binary: return 6
        }
    }

    private static func plain(_ bytes: [UInt8], into values: inout [UInt8]) {
        little(UInt64(bytes.count), bytes: 4, into: &values)
        values += bytes
    }

    private static func little(_ value: UInt64, bytes: Int, into out: inout [UInt8]) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
    }

    private mutating func write(_ bytes: [UInt8]) -> Bool {
        guard FileDescriptorOutput.writeAll(fd, bytes) else { return false }
        offset += Int64(bytes.count)
        return true
    }
}
