import Foundation
import ImageWorkerProtocol
import Testing

@testable import ImageWorkerConsole

/// Tables in, as img2dataset reads them: csv and tsv with a header (RFC 4180 quoting across
/// lines, CRLF), jsonl objects, columns by name; one entry a row, a row without a URL too; a
/// header without the columns asked is the input's error. Read through `GetInput` from real
/// files, in pieces as `get` reads them.
@Suite struct InputTableTests {
    func entries(_ text: String, name: String, format: InputFormat? = nil, columns: InputColumns = InputColumns()) throws -> [GetEntry] {
        let path = NSTemporaryDirectory() + "table-\(UUID().uuidString)-" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var input = GetInput([.file(path)])
        input.format = format
        input.columns = columns
        var seen: [GetEntry] = []
        try input.forEach { entry in
            seen.append(entry)
            return true
        }
        return seen
    }

    @Test func csvWithQuotesAcrossLinesAndCRLF() throws {
        let csv = "id,url,caption\r\n1,http://h/a.jpg,\"a cat, sitting\"\r\n2,http://h/b.jpg,\"two\nlines with \"\"quotes\"\"\"\r\n\r\n3,,none\r\n"
        let rows = try entries(csv, name: "t.csv", columns: InputColumns(caption: "caption", saved: ["id"]))
        #expect(rows.map(\.url) == ["http://h/a.jpg", "http://h/b.jpg", ""])
        #expect(rows.map(\.index) == [0, 1, 2])
        #expect(rows.map(\.caption) == ["a cat, sitting", "two\nlines with \"quotes\"", "none"])
        #expect(rows.map { $0.columns["id"] } == ["1", "2", "3"])
    }

    /// A quote inside an unquoted field is a character, not the start of a field that goes on
    /// to the next line (`5" screen`); a byte order mark does not hide the first column's name.
    @Test func strayQuotesAndAByteOrderMark() throws {
        let tsv = "\u{FEFF}url\tcaption\nhttp://h/a.jpg\ta 5\" screen\nhttp://h/b.jpg\t\"quoted\ttab\"\n"
        let rows = try entries(tsv, name: "t.tsv", columns: InputColumns(caption: "caption"))
        #expect(rows.map(\.url) == ["http://h/a.jpg", "http://h/b.jpg"])
        #expect(rows.map(\.caption) == ["a 5\" screen", "quoted\ttab"])
    }

    @Test func tsvAndTheColumnsNamed() throws {
        let tsv = "URL\tTEXT\tNSFW\thash\nhttp://h/a.jpg\tfirst\tUNLIKELY\tab12\nhttp://h/b.jpg\tsecond\n"
        let rows = try entries(tsv, name: "t.tsv", columns: InputColumns(url: "URL", caption: "TEXT", saved: ["NSFW", "hash"]))
        #expect(rows.map(\.url) == ["http://h/a.jpg", "http://h/b.jpg"])
        #expect(rows[0].columns == ["NSFW": "UNLIKELY", "hash": "ab12"])
        #expect(rows[1].columns == ["NSFW": .null, "hash": .null], "a short row: its missing columns null")
    }

    /// JSON values kept as they are; a caption that is not a string kept as its JSON text; a line
    /// that is not an object, or one without a URL, is a row without a URL.
    @Test func jsonlRows() throws {
        let jsonl = """
            {"url": "http://h/a.jpg", "caption": "a", "score": 0.5, "tags": ["x"]}
            {"url": "http://h/b.jpg", "caption": 7}

            not json
            {"link": "http://h/c.jpg"}
            """
        let rows = try entries(jsonl, name: "t.jsonl", columns: InputColumns(caption: "caption", saved: ["score", "tags"]))
        #expect(rows.map(\.url) == ["http://h/a.jpg", "http://h/b.jpg", "", ""])
        #expect(rows.map(\.caption) == ["a", "7", nil, nil])
        #expect(rows[0].columns == ["score": .double(0.5), "tags": ["x"]])
        #expect(rows[1].columns == ["score": .null, "tags": .null])
    }

    @Test func aHeaderWithoutTheColumnsIsTheInputsError() throws {
        #expect(throws: GetInputError.self) { try entries("link,text\nhttp://h/a.jpg,x\n", name: "t.csv") }
        do {
            _ = try entries("url,text\nhttp://h/a.jpg,x\n", name: "t.csv", columns: InputColumns(caption: "caption"))
            Issue.record("a missing caption column was taken")
        } catch {
            #expect("\(error)".contains("no column \"caption\" (--caption-col) in the header: url, text"), "\(error)")
        }
    }

    /// The format from the extension unless given; a list stays a list (tabs give names).
    @Test func formatsByExtension() throws {
        #expect(InputFormat.of(path: "a/b.CSV") == .csv && InputFormat.of(path: "x.ndjson") == .jsonl && InputFormat.of(path: "u.txt") == .txt)
        let list = try entries("http://h/a.jpg\tcat.jpg\n# comment\nhttp://h/b.jpg\n", name: "urls.txt")
        #expect(list.map(\.url) == ["http://h/a.jpg", "http://h/b.jpg"] && list[0].name == "cat.jpg")
        let forced = try entries("url\nhttp://h/a.jpg\n", name: "urls.txt", format: .csv)
        #expect(forced.map(\.url) == ["http://h/a.jpg"])
    }

    /// A table larger than a read (64 KiB), quoted line breaks falling on every side of a piece's
    /// end: every row, in order, its caption whole.
    @Test func aLargeTableStreamsInPieces() throws {
        var csv = "url,caption\n"
        for i in 0..<6_000 { csv += "http://h/\(i).jpg,\"line \(i)\nsecond, \"\"part\"\"\"\n" }
        let rows = try entries(csv, name: "big.csv", columns: InputColumns(caption: "caption"))
        #expect(rows.count == 6_000)
        #expect(rows.enumerated().allSatisfy { i, row in row.url == "http://h/\(i).jpg" && row.caption == "line \(i)\nsecond, \"part\"" })
    }
}
