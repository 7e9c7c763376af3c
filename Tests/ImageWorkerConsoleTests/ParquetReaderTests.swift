import Foundation
import Testing

@testable import ImageWorkerConsole

/// `get -i table.parquet`'s reader on what the format's specifications spell out (the hybrid
/// levels' example, a Snappy stream by hand) and on damaged files: a table cut anywhere, or with
/// bytes flipped, is an error, never a crash or a row made up. pyarrow's own files (Snappy,
/// dictionaries, v2 pages, row groups) are read in the clients' tests.
@Suite struct ParquetReaderTests {
    @Test func hybridLevelsAsTheSpecificationShowsThem() throws {
        // parquet-format Encodings.md: 0...7 bit-packed at width 3.
        #expect(try ParquetColumnCursor.hybrid([0x03, 0x88, 0xC6, 0xFA], width: 3, count: 8) == Array(0..<8))
        // A run of 5 ones, then 4 bit-packed values (a group of 8, cut at the count).
        #expect(try ParquetColumnCursor.hybrid([0x0A, 0x01, 0x03, 0b0000_0101], width: 1, count: 9) == [1, 1, 1, 1, 1, 1, 0, 1, 0])
        #expect(throws: ParquetReader.Failure.self) { try ParquetColumnCursor.hybrid([0x0A, 0x01], width: 1, count: 6) }
        // Run lengths as large as a varint holds (63 bits): a run is cut at the count, bit-packed
        // groups past the data are refused (at width 0 they take none); none overflows.
        let huge: [UInt8] = Array(repeating: 0xFF, count: 8) + [0x7F]
        #expect(try ParquetColumnCursor.hybrid([0xFE] + huge.dropFirst() + [0x01], width: 1, count: 5) == [1, 1, 1, 1, 1])
        #expect(throws: ParquetReader.Failure.self) { try ParquetColumnCursor.hybrid(huge[...] + [0xFF], width: 3, count: 5) }
        #expect(try ParquetColumnCursor.hybrid(huge[...] + [0xFF], width: 0, count: 5) == [0, 0, 0, 0, 0], "width 0 takes no bytes")
    }

    @Test func snappyLiteralsAndOverlappingCopies() throws {
        // 12 bytes: the literal "abc", then a copy of 9 from 3 back (it overlaps what it writes).
        #expect(try Snappy.decompress([0x0C, 0x08, 0x61, 0x62, 0x63, 0x15, 0x03], limit: 12) == Array("abcabcabcabc".utf8))
        #expect(throws: Snappy.Failure.self) { try Snappy.decompress([0x0C, 0x08, 0x61, 0x62, 0x63, 0x15, 0x04], limit: 12) }
        #expect(throws: Snappy.Failure.self) { try Snappy.decompress([0x0C, 0x08, 0x61, 0x62, 0x63, 0x15, 0x03], limit: 11) }
        #expect(throws: Snappy.Failure.self) { try Snappy.decompress([0x0D, 0x08, 0x61, 0x62, 0x63, 0x15, 0x03], limit: 13) }
    }

    /// LZ4 blocks (LZ4_RAW), raw or in Hadoop's frames (the older LZ4 codec), by hand.
    @Test func lz4SequencesRunsAndHadoopFrames() throws {
        // "abc", then a copy of 9 from 3 back (a run over what it writes), then "XYZ" alone.
        let block: [UInt8] = [0x35, 0x61, 0x62, 0x63, 0x03, 0x00, 0x30, 0x58, 0x59, 0x5A]
        let text = Array("abcabcabcabcXYZ".utf8)
        #expect(try LZ4.block(block[...], size: 15) == text)
        #expect(try LZ4.hadoop(([0, 0, 0, 15, 0, 0, 0, 10] + block)[...], size: 15) == text, "framed")
        #expect(try LZ4.hadoop(block[...], size: 15) == text, "raw under the old codec, as early Arrow wrote it")
        // Two frames, the second of two blocks.
        let abc: [UInt8] = [0x30, 0x61, 0x62, 0x63], de: [UInt8] = [0x20, 0x64, 0x65]
        #expect(try LZ4.hadoop(([0, 0, 0, 3, 0, 0, 0, 4] + abc + [0, 0, 0, 5, 0, 0, 0, 4] + abc + [0, 0, 0, 3] + de)[...], size: 8)
            == Array("abcabcde".utf8))
        // A literal length past 15: 15 + 255 + 30.
        let long = [UInt8](repeating: 0x41, count: 300)
        #expect(try LZ4.block(([0xF0, 0xFF, 0x1E] + long)[...], size: 300) == long)
        // Copies from before the start or of nothing, sizes other than the page's, data cut short.
        #expect(throws: LZ4.Failure.self) { try LZ4.block([0x35, 0x61, 0x62, 0x63, 0x04, 0x00, 0x30, 0x58, 0x59, 0x5A], size: 15) }
        #expect(throws: LZ4.Failure.self) { try LZ4.block([0x35, 0x61, 0x62, 0x63, 0x00, 0x00, 0x30, 0x58, 0x59, 0x5A], size: 15) }
        #expect(throws: LZ4.Failure.self) { try LZ4.block(block[...], size: 14) }
        #expect(throws: LZ4.Failure.self) { try LZ4.block(block[...], size: 16) }
        #expect(throws: LZ4.Failure.self) { try LZ4.hadoop(block[...], size: -1) }
        for cut in 0..<block.count {
            #expect(throws: LZ4.Failure.self, "cut at \(cut)") { try LZ4.hadoop(block[..<cut], size: 15) }
        }
    }

    /// Thrift's compact booleans: a struct's are their field's type, a list's are a byte each.
    @Test func booleansInStructsAndLists() throws {
        // {1: true, 2: [true, false], 3: 7}
        let bytes: [UInt8] = [0x11, 0x19, 0x21, 0x01, 0x00, 0x15, 0x0E, 0x00]
        var at = 0
        let value = try ThriftValue.structure(bytes, &at)
        #expect(value[1]?.int == 1 && value[2]?.list.compactMap(\.int) == [1, 0] && value[3]?.int == 7 && at == bytes.count)
    }

    func table() throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reader-\(UUID().uuidString)").path
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        defer {
            close(fd)
            unlink(path)
        }
        var writer = ParquetWriter(
            fd: fd, columns: [.init(name: "url", type: .string), .init(name: "n", type: .int64), .init(name: "caption", type: .string)],
            rowGroupBytes: 200)
        for n in 0..<40 {
            let row: [ParquetWriter.Value?] = [.string("https://example.org/\(n).jpg"), .int(Int64(n)), n % 4 == 0 ? nil : .string("caption \(n)")]
            _ = writer.append(row)
        }
        _ = writer.finish()
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func rowsOfTheAskedColumnsInOrder() throws {
        let reader = try ParquetReader(.bytes(try table()))
        #expect(reader.names == ["url", "n", "caption"] && reader.rowGroups.count > 3)
        var rows: [[ParquetReader.Value]] = []
        _ = try reader.forEachRow(["caption", "url"]) { row in
            rows.append(row)
            return rows.count < 30
        }
        #expect(rows.count == 30 && rows[0] == [.null, .bytes(Array("https://example.org/0.jpg".utf8))])
        #expect(rows[29][0].text == "caption 29" && rows[29][1].json == "https://example.org/29.jpg")
        #expect(throws: ParquetReader.Failure.self) { try reader.forEachRow(["license"]) { _ in true } }
    }

    /// `get` counts a Parquet table's rows from its footer (a walk through a million rows took
    /// seconds before the first request), and the count is the walk's: every row one entry, the
    /// entries numbered on across the sources.
    @Test func aTablesCountIsItsFootersAndItsWalks() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("count-\(UUID().uuidString).parquet").path
        try Data(try table()).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        #expect(try ParquetReader(.bytes(try table())).check(["url", "caption"]) == 40)
        var input = GetInput([.url("http://h/first.jpg"), .file(path), .text(Array("http://h/last.jpg\n".utf8))])
        input.columns = InputColumns(caption: "caption")
        var seen: [GetEntry] = []
        try input.forEach { seen.append($0); return true }
        #expect(try input.count() == 42 && seen.count == 42 && seen.map(\.index) == Array(0..<42))
        #expect(seen[1].url == "https://example.org/0.jpg" && seen[41].url == "http://h/last.jpg")
        var piped = GetInput([.text(try table())])
        piped.format = .parquet
        #expect(try piped.count() == 40)
        #expect(throws: GetInputError.self) { try GetInput([.file(path + ".missing.parquet")]).count() }
    }

    /// A page header that claims more values than any writer puts in a page is refused before
    /// anything is made for them.
    @Test func aPageOfAbsurdlyManyValuesIsRefused() throws {
        for claimed: Int32 in [1 << 30, -5] {
            var cursor = try Self.onePage(.plain(values: claimed), of: Self.urls)
            #expect(throws: ParquetReader.Failure.self) { try cursor.next() }
        }
    }

    /// Sizes and counts a damaged footer or page header may hold, up to a varint's largest, are
    /// refused by comparison, never added or ranged past what Int holds.
    @Test func absurdSizesInFootersAndPagesAreRefused() throws {
        let file = Array("PAR1".utf8) + [UInt8](repeating: 0, count: 64) + Array("PAR1".utf8)
        let chunkOfAllMemory = ThriftValue.structure([4: .int(0), 7: .int(Int64.max), 9: .int(4)])
        #expect(throws: ParquetReader.Failure.self) { try ParquetColumnCursor(source: .bytes(file), column: Self.urls, meta: chunkOfAllMemory) }
        // A v2 page whose levels claim more than Int holds, together.
        var cursor = try Self.onePage(.v2(levelBytes: (Int64.max - 4, 8)), of: Self.urls)
        #expect(throws: ParquetReader.Failure.self) { try cursor.next() }
        // Fixed-length values as wide as the schema may claim.
        let fixed = ParquetReader.Column(name: "h", chunk: 0, physical: 7, typeLength: 1 << 62, optional: false)
        var wide = try Self.onePage(.plain(values: 8), of: fixed)
        #expect(throws: ParquetReader.Failure.self) { try wide.next() }
        // A string, a list and a map of more than Int holds (a 64-bit varint past Int.max).
        let past: [UInt8] = Array(repeating: 0xFF, count: 9) + [0x01]
        for bytes in [[0x18] + past, [0x19, 0xF8] + past, [0x1B] + past + [0x55]] {
            var at = 0
            #expect(throws: ThriftValue.Failure.self) { try ThriftValue.structure(bytes, &at) }
        }
        // A row group of a negative number of rows.
        var footer = ThriftCompactWriter()
        footer.i32(1, 1)
        footer.list(2, of: .structure, count: 2)
        footer.element { root in
            root.string(4, "schema")
            root.i32(5, 1)
        }
        footer.element { leaf in
            leaf.i32(1, 6)
            leaf.i32(3, 1)
            leaf.string(4, "url")
        }
        footer.i64(3, -5)
        footer.list(4, of: .structure, count: 1)
        footer.element { group in
            group.list(1, of: .structure, count: 0)
            group.i64(2, 0)
            group.i64(3, -5)
        }
        let tail = footer.finish()
        let table = Array("PAR1".utf8) + tail + [UInt8(tail.count), 0, 0, 0] + Array("PAR1".utf8)
        #expect(throws: ParquetReader.Failure.self) { try ParquetReader(.bytes(table)).forEachRow(["url"]) { _ in true } }
        #expect(throws: ParquetReader.Failure.self) { try ParquetReader(.bytes(table)).check(["url"]) }
    }

    @Test func damagedTablesAreErrors() throws {
        let whole = try table()
        for length in stride(from: 0, to: whole.count, by: 7) {
            #expect(throws: (any Error).self, "cut at \(length)") { try ParquetReader.table(.bytes(Array(whole.prefix(length)))) }
        }
        // Bytes flipped anywhere: an error or no more rows than there are, never a crash.
        for at in stride(from: 4, to: whole.count - 8, by: 5) {
            var damaged = whole
            damaged[at] ^= 0xA5
            if let table = try? ParquetReader.table(.bytes(damaged)) { #expect(table.rows <= 40, "flipped at \(at)") }
        }
    }

    static let urls = ParquetReader.Column(name: "url", chunk: 0, physical: 6, typeLength: 0, optional: true)

    enum PageHeader {
        /// A v1 data page of PLAIN values, its header claiming `values`.
        case plain(values: Int32)
        /// A v2 data page of two values, its level sections claiming these lengths.
        case v2(levelBytes: (definition: Int64, repetition: Int64))
    }

    /// A cursor over a chunk of one page: the header as given, then 8 zero bytes said to be its
    /// body, in a file's magic.
    static func onePage(_ kind: PageHeader, of column: ParquetReader.Column) throws -> ParquetColumnCursor {
        var header = ThriftCompactWriter()
        switch kind {
        case .plain(let values):
            header.i32(1, 0)
            header.i32(2, 8)
            header.i32(3, 8)
            header.structure(5) { page in
                page.i32(1, values)
                for (field, value): (Int16, Int32) in [(2, 0), (3, 3), (4, 3)] { page.i32(field, value) }
            }
        case .v2(let levels):
            header.i32(1, 3)
            header.i32(2, 8)
            header.i32(3, 8)
            header.structure(8) { page in
                for (field, value): (Int16, Int32) in [(1, 2), (2, 0), (3, 2), (4, 0)] { page.i32(field, value) }
                page.i64(5, levels.definition)
                page.i64(6, levels.repetition)
            }
        }
        let chunk = header.finish() + [UInt8](repeating: 0, count: 8)
        let meta = ThriftValue.structure([4: .int(0), 7: .int(Int64(chunk.count)), 9: .int(4)])
        return try ParquetColumnCursor(source: .bytes(Array("PAR1".utf8) + chunk + Array("PAR1".utf8)), column: column, meta: meta)
    }
}
