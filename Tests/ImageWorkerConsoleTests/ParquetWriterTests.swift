import Foundation
import Testing

@testable import ImageWorkerConsole

/// The shards' Parquet tables: Thrift's compact protocol byte for byte as its specification
/// writes it, and whole files read back by `ParquetReader` (nulls, text, numbers, bytes; several
/// row groups; an empty table). pyarrow reads the same files in the clients' tests, and writes
/// the tables `get` reads there.
@Suite struct ParquetWriterTests {
    @Test func thriftCompactFieldsListsAndStructs() {
        var thrift = ThriftCompactWriter()
        thrift.i32(1, 1)  // delta 1, i32: 0x15, zigzag(1) = 2
        thrift.i64(3, -1)  // delta 2, i64: 0x26, zigzag(-1) = 1
        thrift.string(20, "ab")  // delta 17: long form, type then zigzag(20) = 40
        thrift.list(21, of: .i32, count: 2)  // 0x19, then 2 elements of i32: 0x25
        thrift.element(Int32(300))  // zigzag 600: 0xD8 0x04
        thrift.element(Int32(-2))  // 3
        thrift.structure(22) { inner in inner.i32(1, 0) }  // 0x1C, { 0x15 0x00 } 0x00
        thrift.list(23, of: .binary, count: 15)  // 15 or more: 0xF8, then the count
        for _ in 0..<15 { thrift.element("") }
        let bytes = thrift.finish()
        #expect(bytes.prefix(25) == [0x15, 0x02, 0x26, 0x01, 0x08, 40, 0x02, 0x61, 0x62, 0x19, 0x25, 0xD8, 0x04, 0x03, 0x1C, 0x15, 0x00, 0x00, 0x19, 0xF8, 15] + [0, 0, 0, 0])
        #expect(bytes.last == 0 && bytes.count == 21 + 15 + 1)
    }

    func write(_ rows: [[ParquetWriter.Value?]], columns: [ParquetWriter.Column], rowGroupBytes: Int = 1 << 20) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parquet-\(UUID().uuidString)").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        defer { unlink(path) }
        var writer = ParquetWriter(fd: fd, columns: columns, rowGroupBytes: rowGroupBytes)
        for row in rows {
            let appended = writer.append(row)
            #expect(appended)
        }
        let finished = writer.finish()
        #expect(finished)
        close(fd)
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static let columns: [ParquetWriter.Column] = [
        .init(name: "key", type: .string), .init(name: "width", type: .int32), .init(name: "bytes", type: .int64),
        .init(name: "jpg", type: .binary),
    ]

    @Test func rowsReadBackWithTheirNulls() throws {
        let rows: [[ParquetWriter.Value?]] = (0..<11).map { (n: Int) -> [ParquetWriter.Value?] in
            let width: ParquetWriter.Value? = n % 3 == 0 ? nil : .int(Int64(n) - 5)
            let image: ParquetWriter.Value? = n % 2 == 0 ? .bytes([0xFF, 0xD8, UInt8(n)]) : nil
            return [.string("k\(n)"), width, .int(Int64(n) << 40), image]
        }
        let table = try ParquetReader.table(.bytes(try write(rows, columns: Self.columns)))
        #expect(table.names == ["key", "width", "bytes", "jpg"])
        #expect(table.rows == 11 && table.rowGroups == 1)
        #expect(table.columns["key"]?.map { $0.text } == (0..<11).map { "k\($0)" })
        let widths: [ParquetReader.Value] = (0..<11).map { n in n % 3 == 0 ? .null : .int(Int64(n) - 5) }
        let sizes: [ParquetReader.Value] = (0..<11).map { .int(Int64($0) << 40) }
        let images: [ParquetReader.Value] = (0..<11).map { n in n % 2 == 0 ? .bytes([0xFF, 0xD8, UInt8(n)]) : .null }
        #expect(table.columns["width"] == widths)
        #expect(table.columns["bytes"] == sizes)
        #expect(table.columns["jpg"] == images)
    }

    /// Past `rowGroupBytes` of values a row group is written: the rows read back the same, in
    /// order, from several groups; the same rows make the same bytes.
    @Test func largeTablesAreWrittenInRowGroups() throws {
        let rows: [[ParquetWriter.Value?]] = (0..<50).map { (n: Int) -> [ParquetWriter.Value?] in
            [.string("k\(n)"), .int(Int64(n)), nil, .bytes(Array(repeating: UInt8(n), count: 100))]
        }
        let bytes = try write(rows, columns: Self.columns, rowGroupBytes: 1000)
        let table = try ParquetReader.table(.bytes(bytes))
        #expect(table.rowGroups > 4 && table.rows == 50)
        let widths: [ParquetReader.Value] = (0..<50).map { .int(Int64($0)) }
        #expect(table.columns["width"] == widths)
        #expect(table.columns["bytes"] == [ParquetReader.Value](repeating: .null, count: 50))
        #expect(table.columns["jpg"]?.last == .bytes(Array(repeating: 49, count: 100)))
        #expect(try write(rows, columns: Self.columns, rowGroupBytes: 1000) == bytes)
    }

    @Test func anEmptyTableHasItsSchema() throws {
        let table = try ParquetReader.table(.bytes(try write([], columns: Self.columns)))
        #expect(table.names == ["key", "width", "bytes", "jpg"] && table.rows == 0 && table.rowGroups == 0)
    }
}
