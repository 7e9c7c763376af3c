import ImageWorkerProtocol

/// An input list's format (img2dataset's `input_format`): `txt`, a URL a line (optionally a tab
/// and a file name), or a table whose columns give each row's URL, caption and the columns to
/// keep: `csv` and `tsv` (a header row first; RFC 4180 quoting, a quoted field may hold the
/// delimiter, quotes doubled and line breaks), `jsonl` (a JSON object a line) and `parquet`
/// (`ParquetReader`, a row at a time).
public enum InputFormat: String, Sendable, CaseIterable {
    case txt, csv, tsv, jsonl, parquet

    /// From a file's extension: `.csv`, `.tsv`, `.jsonl` or `.ndjson`, `.parquet` or `.pq`;
    /// anything else is `txt`.
    public static func of(path: String) -> InputFormat {
        let lowered = path.lowercased()
        if lowered.hasSuffix(".parquet") || lowered.hasSuffix(".pq") { return .parquet }
        if lowered.hasSuffix(".csv") { return .csv }
        if lowered.hasSuffix(".tsv") { return .tsv }
        if lowered.hasSuffix(".jsonl") || lowered.hasSuffix(".ndjson") { return .jsonl }
        return .txt
    }
}

/// Which columns of a table say what (`--url-col`, `--caption-col`, `--save-columns`).
public struct InputColumns: Sendable, Equatable {
    public var url = "url"
    public var caption: String?
    public var saved: [String] = []
    /// The column of each row's SHA-256 (`--verify-hash-col`, img2dataset's `verify_hash`).
    public var hash: String?

    public init(url: String = "url", caption: String? = nil, saved: [String] = [], hash: String? = nil) {
        (self.url, self.caption, self.saved, self.hash) = (url, caption, saved, hash)
    }

    /// The columns a row's entry is made of, each once: the URL's, the caption's, the kept ones,
    /// the hash's; with the flag that named each (for a table without it).
    var wanted: [(name: String, flag: String)] {
        var named: [(name: String, flag: String)] = [(url, "--url-col")]
        named += [caption].compactMap { $0 }.map { ($0, "--caption-col") }
        named += saved.map { ($0, "--save-columns") }
        named += [hash].compactMap { $0 }.map { ($0, "--verify-hash-col") }
        var wanted: [(name: String, flag: String)] = []
        for column in named where !wanted.contains(where: { $0.name == column.name }) { wanted.append(column) }
        return wanted
    }
}

/// A table's rows as entries, fed a line at a time (streaming: a record is held only until it
/// is complete). Every row is an entry, one without a usable URL too (its URL is then empty, and
/// the download fails as an invalid URL would): a table's rows and the results match one to one.
/// A header without the columns asked is the input's error (`GetInputError`).
struct InputTable {
    let format: InputFormat
    let columns: InputColumns
    /// Where the input came from, for errors.
    let source: String
    /// `columns.wanted`'s names, and the flags that named them (made once a table).
    let wanted: [String]
    private let flags: [String]
    /// The header's position of each `wanted` column (csv, tsv), once read.
    private var positions: [Int]?
    /// A csv or tsv record whose quoted field goes on to the next line.
    private var pending: [UInt8] = []

    init(format: InputFormat, columns: InputColumns, source: String) {
        (self.format, self.columns, self.source) = (format, columns, source)
        let named = columns.wanted
        (wanted, flags) = (named.map(\.name), named.map(\.flag))
    }

    /// The entry the line completes (numbered `index`), or nil: the header, a blank line, or a
    /// record that goes on.
    mutating func take(_ line: ArraySlice<UInt8>, index: Int) throws -> GetEntry? {
        switch format {
        case .parquet:
            throw GetInputError(message: "\(source): a Parquet table is read by rows, not lines")
        case .txt:
            return GetEntry.parse(line: String(decoding: line, as: UTF8.self), index: index)
        case .jsonl:
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return nil }
            guard case .object(let object)? = try? JSONParser.parse(line) else { return GetEntry(url: "", index: index) }
            return entry(index: index) { object[$0] }
        case .csv, .tsv:
            pending += line
            var record = pending
            if record.last == 0x0D { record.removeLast() }
            let (fields, open) = Self.fields(record, delimiter: format == .csv ? 0x2C : 0x09)
            // A quoted field goes on past this line break.
            if open {
                pending.append(0x0A)
                return nil
            }
            pending = []
            if record.isEmpty { return nil }
            guard let positions else {
                positions = try headerPositions(fields)
                return nil
            }
            return entry(index: index) { name in
                wanted.firstIndex(of: name).flatMap { positions[$0] < fields.count ? .string(fields[positions[$0]]) : nil }
            }
        }
    }

    /// A row's entry from its values by column name (nil: absent).
    func entry(index: Int, _ value: (String) -> JSONValue?) -> GetEntry {
        let url = value(columns.url)?.stringValue?.trimmingCharacters(in: .whitespaces) ?? ""
        var entry = GetEntry(url: url, index: index)
        if let caption = columns.caption, let text = value(caption), text != .null {
            // (A JSON caption that is not a string is kept as its JSON text.)
            entry.caption = text.stringValue ?? JSONWriter.encodeString(text)
        }
        for name in columns.saved { entry.columns[name] = value(name) ?? .null }
        if let hash = columns.hash, let text = value(hash)?.stringValue?.trimmingCharacters(in: .whitespaces).lowercased(), !text.isEmpty {
            entry.expectedSHA256 = text
        }
        return entry
    }

    private func headerPositions(_ fields: [String]) throws -> [Int] {
        // (A spreadsheet's UTF-8 byte order mark before the first name is not part of it.)
        var header = fields
        if let first = header.first, first.hasPrefix("\u{FEFF}") { header[0] = String(first.dropFirst()) }
        return try zip(wanted, flags).map { name, flag in
            guard let at = header.firstIndex(of: name) else {
                throw GetInputError(message: "\(source): no column \"\(name)\" (\(flag)) in the header: \(header.joined(separator: ", "))")
            }
            return at
        }
    }

    /// A csv or tsv record's fields, and whether it ends inside a quoted field (it goes on past a
    /// line break). RFC 4180: a quote opens a quoted field only at the field's start (inside one,
    /// `""` is a quote); elsewhere a quote is a character (`5" screen`).
    static func fields(_ record: [UInt8], delimiter: UInt8) -> (fields: [String], open: Bool) {
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var atStart = true
        var i = 0
        while i < record.count {
            let c = record[i]
            if quoted {
                if c == 0x22 {
                    if i + 1 < record.count, record[i + 1] == 0x22 {
                        field.append(0x22)
                        i += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(c)
                }
            } else if c == 0x22 && atStart {
                quoted = true
            } else if c == delimiter {
                fields.append(String(decoding: field, as: UTF8.self))
                field = []
                atStart = true
                i += 1
                continue
            } else {
                field.append(c)
            }
            atStart = false
            i += 1
        }
        fields.append(String(decoding: field, as: UTF8.self))
        return (fields, quoted)
    }
}
