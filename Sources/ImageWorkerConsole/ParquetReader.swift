import Foundation
import ImageWorkerProtocol

/// A Parquet table read a row at a time (`get -i table.parquet`), never whole: the footer, then
/// for each row group one page at a time of each column asked (`ParquetColumnCursor`). Flat
/// columns of any physical type (text, numbers, booleans), optional or required; pages v1 and
/// v2, every encoding parquet-format defines, every codec but LZO (which no current writer makes):
/// Snappy (pyarrow's, pandas', DuckDB's and Spark's default), ZSTD (Polars'), GZIP, Brotli, LZ4.
/// LZO pages and nested columns are refused by name.
public struct ParquetReader {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A value of a row: text and binary columns' bytes as they are.
    public enum Value: Equatable, Sendable {
        case null
        case bool(Bool)
        case int(Int64)
        case double(Double)
        case bytes([UInt8])

        /// As a table's value in a manifest or a shard's metadata (bytes as UTF-8 text).
        public var json: JSONValue {
            switch self {
            case .null: return .null
            case .bool(let value): return .bool(value)
            case .int(let value): return .int(value)
            case .double(let value): return .double(value)
            case .bytes(let bytes): return .string(String(decoding: bytes, as: UTF8.self))
            }
        }

        public var text: String? {
            if case .bytes(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }
    }

    /// Where the table's bytes are: a file, read where needed, or stdin's bytes.
    public enum Source {
        case file(Int32)
        case bytes([UInt8])

        func read(_ offset: Int, _ count: Int) throws(Failure) -> [UInt8] {
            switch self {
            case .bytes(let bytes):
                guard offset >= 0, count >= 0, offset <= bytes.count - count else { throw Failure(description: "a read past the end") }
                return Array(bytes[offset..<offset + count])
            case .file(let fd):
                var out = [UInt8](repeating: 0, count: count)
                var done = 0
                while done < count {
                    let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw Failure(description: n == 0 ? "a read past the end" : String(cString: strerror(errno))) }
                    done += n
                }
                return out
            }
        }

        var size: Int {
            switch self {
            case .bytes(let bytes): return bytes.count
            case .file(let fd):
                var info = stat()
                return fstat(fd, &info) == 0 ? Int(info.st_size) : 0
            }
        }
    }

    /// A top-level column of flat values.
    struct Column {
        let name: String
        /// Its place among a row group's column chunks.
        let chunk: Int
        /// Parquet's physical type (0 BOOLEAN, 1 INT32, … 6 BYTE_ARRAY, 7 FIXED_LEN_BYTE_ARRAY), and
        /// a fixed length's bytes.
        let physical: Int64, typeLength: Int
        /// Nulls are allowed (it has definition levels).
        let optional: Bool
    }

    let source: Source
    let columns: [String: Column]
    /// Top-level columns that are groups or lists (not read).
    let nested: Set<String>
    let rowGroups: [ThriftValue]
    /// The top-level columns' names, in order.
    public let names: [String]

    public init(_ source: Source) throws(Failure) {
        self.source = source
        let size = source.size
        guard size >= 12 else { throw Failure(description: "not a Parquet file (\(size) bytes)") }
        let tail = try source.read(size - 8, 8)
        guard try source.read(0, 4) == Array("PAR1".utf8), tail[4...] == ArraySlice("PAR1".utf8) else {
            throw Failure(description: "not a Parquet file (no PAR1 at its ends)")
        }
        let length = Int(tail[0]) | Int(tail[1]) << 8 | Int(tail[2]) << 16 | Int(tail[3]) << 24
        guard length > 0, length <= size - 12 else { throw Failure(description: "a footer of \(length) bytes in a file of \(size)") }
        let footerBytes = try source.read(size - 8 - length, length)
        var at = 0
        let footer: ThriftValue
        do {
            footer = try ThriftValue.structure(footerBytes, &at)
        } catch {
            throw Failure(description: "its footer cannot be read: \(error.message)")
        }
        let schema = footer[2]?.list ?? []
        guard let root = schema.first, let rootChildren = root[5]?.int else { throw Failure(description: "its footer has no schema") }
        var columns: [String: Column] = [:]
        var nested: Set<String> = []
        var names: [String] = []
        var remaining = [Int(rootChildren)]
        var leaf = 0
        for element in schema.dropFirst() {
            guard let last = remaining.last, last > 0 else { throw Failure(description: "its schema's tree does not add up") }
            let topLevel = remaining.count == 1
            remaining[remaining.count - 1] -= 1
            let name = element[4]?.text ?? ""
            if topLevel { names.append(name) }
            if let children = element[5]?.int, children > 0 {
                if topLevel { nested.insert(name) }
                remaining.append(Int(children))
            } else {
                if topLevel {
                    if element[3]?.int == 2 {
                        nested.insert(name)  // REPEATED: a list
                    } else {
                        columns[name] = Column(
                            name: name, chunk: leaf, physical: element[1]?.int ?? 6, typeLength: Int(element[2]?.int ?? 0),
                            optional: element[3]?.int != 0)
                    }
                }
                leaf += 1
            }
            while remaining.count > 1, remaining.last == 0 { remaining.removeLast() }
        }
        (self.columns, self.nested, self.names, rowGroups) = (columns, nested, names, footer[4]?.list ?? [])
    }

    /// Checks from the footer alone that the columns `wanted` can be read (there, flat, and in
    /// every row group a chunk within the file, of a codec and encodings this reader has), and
    /// counts the rows (up to 2^40: a footer that says more is damaged, or a table no run gets
    /// through). What is checked is what `forEachRow` would find before it reads a page.
    public func check(_ wanted: [String]) throws(Failure) -> Int {
        let asked = try columns(wanted)
        var total: Int64 = 0
        for group in rowGroups {
            let rows = try rowCount(group)
            guard rows <= (1 << 40) - total else { throw Failure(description: "more than 2^40 rows") }
            total += rows
            _ = try cursors(asked, group)
        }
        return Int(total)
    }

    /// A small table read whole (tests and tools): its columns' names, its row groups, and every
    /// flat column's values.
    public struct Table {
        public let names: [String]
        public let rowGroups: Int
        public let columns: [String: [Value]]
        public var rows: Int { columns.values.first?.count ?? 0 }
    }

    public static func table(_ source: Source) throws -> Table {
        let reader = try ParquetReader(source)
        let flat = reader.names.filter { reader.columns[$0] != nil }
        var columns = Dictionary(uniqueKeysWithValues: flat.map { ($0, [Value]()) })
        _ = try reader.forEachRow(flat) { row in
            for (name, value) in zip(flat, row) { columns[name, default: []].append(value) }
            return true
        }
        return Table(names: reader.names, rowGroups: reader.rowGroups.count, columns: columns)
    }

    public static func table(path: String) throws -> Table {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        return try table(.file(fd))
    }

    /// Calls `body` with each row's values of the columns `wanted` (by name, in that order) until
    /// it returns false; false then.
    public func forEachRow(_ wanted: [String], _ body: ([Value]) throws -> Bool) throws -> Bool {
        let asked = try columns(wanted)
        for group in rowGroups {
            let rows = try rowCount(group)
            var cursors = try cursors(asked, group)
            for _ in 0..<rows {
                var row: [Value] = []
                row.reserveCapacity(cursors.count)
                for i in cursors.indices { row.append(try cursors[i].next()) }
                guard try body(row) else { return false }
            }
        }
        return true
    }

    private func columns(_ wanted: [String]) throws(Failure) -> [Column] {
        try wanted.map { name throws(Failure) -> Column in
            if let column = columns[name] { return column }
            if nested.contains(name) { throw Failure(description: "column \"\(name)\" is nested (a list or a group): not read") }
            throw Failure(description: "no column \"\(name)\" (its columns: \(names.joined(separator: ", ")))")
        }
    }

    private func rowCount(_ group: ThriftValue) throws(Failure) -> Int64 {
        let rows = group[3]?.int ?? 0
        guard rows >= 0 else { throw Failure(description: "a row group of \(rows) rows") }
        return rows
    }

    /// A cursor for each column `asked` over its chunk in `group`.
    private func cursors(_ asked: [Column], _ group: ThriftValue) throws(Failure) -> [ParquetColumnCursor] {
        let chunks = group[1]?.list ?? []
        return try asked.map { column throws(Failure) -> ParquetColumnCursor in
            guard column.chunk < chunks.count, let meta = chunks[column.chunk][3] else {
                throw Failure(description: "column \"\(column.name)\" has no chunk in a row group")
            }
            return try ParquetColumnCursor(source: source, column: column, meta: meta)
        }
    }
}
