import Foundation

/// The URLs of a `get` run, read as they are fed, never all held: command-line arguments, list
/// files (read a piece at a time, each time they are walked) and a list from stdin (kept as its
/// bytes, as stdin cannot be read twice). Entries are numbered in this order from 0.
public struct GetInput: Sendable {
    public enum Source: Sendable {
        case url(String)
        /// A list file: one URL per line, optionally a tab and the file name (`GetEntry.parse`), or
        /// a table (`InputTable`).
        case file(String)
        /// A list's text (stdin).
        case text([UInt8])
    }

    public var sources: [Source]
    /// How lists are read: nil, each file by its extension (`InputFormat.of`), stdin as `txt`.
    public var format: InputFormat?
    /// A table's columns (`csv`, `tsv`, `jsonl`).
    public var columns = InputColumns()

    public init(_ sources: [Source]) {
        self.sources = sources
    }

    /// Fixed entries (tests, and lists given whole).
    public init(entries: [GetEntry]) {
        sources = entries.map { .url($0.url) }
        names = Dictionary(entries.compactMap { entry in entry.name.map { (entry.index, $0) } }, uniquingKeysWith: { a, _ in a })
    }

    /// Names of fixed entries, by index (`init(entries:)` only).
    private var names: [Int: String] = [:]

    /// Calls `body` with each entry in order until it returns false. Throws when a list cannot be
    /// read.
    public func forEach(_ body: (GetEntry) throws -> Bool) throws {
        var index = 0
        for source in sources {
            guard try forEach(in: source, from: &index, body) else { return }
        }
    }

    /// Walks the entries as `forEach` does, but for a Parquet table's rows, which are not read:
    /// its footer is checked (`ParquetReader.check`) and counts them. Entries of tables carry no
    /// names, so what `body` checks of a list's entries is all checked. When `body` has seen
    /// them all, `count()` answers from this walk.
    public mutating func check(_ body: (GetEntry) throws -> Bool) throws {
        var index = 0
        for source in sources {
            if let rows = try parquetRows(source) {
                index += rows
                continue
            }
            guard try forEach(in: source, from: &index, body) else { return }
        }
        counted = index
    }

    /// What `check` counted.
    private var counted: Int?

    /// How many entries there are: what `check` counted, or a `check` of them all.
    public func count() throws -> Int {
        if let counted { return counted }
        var walked = self
        try walked.check { _ in true }
        return walked.counted ?? 0
    }

    /// The entries of one source, numbered from `index` on (left past them), until `body` says
    /// to stop (false).
    private func forEach(in source: Source, from index: inout Int, _ body: (GetEntry) throws -> Bool) throws -> Bool {
        switch source {
        case .url(let url):
            defer { index += 1 }
            return try body(GetEntry(url: url, index: index, name: names[index]))
        case .text(let bytes):
            var table = InputTable(format: format ?? .txt, columns: columns, source: "stdin")
            if table.format == .parquet { return try rows(of: .bytes(bytes), table, from: &index, body) }
            return try LineReader.lines(of: bytes[...], { line, _ in try take(line, &table, &index, body) })
        case .file(let path):
            let fd = try open(path)
            defer { close(fd) }
            var table = InputTable(format: format ?? InputFormat.of(path: path), columns: columns, source: path)
            if table.format == .parquet { return try rows(of: .file(fd), table, from: &index, body) }
            do {
                return try LineReader.lines(of: fd, pieceBytes: 1 << 16) { line, _ in try take(line, &table, &index, body) }
            } catch let failure as LineReader.Failure {
                throw GetInputError(message: "cannot read \(path): \(failure)")
            }
        }
    }

    private func open(_ path: String) throws -> Int32 {
        let fd = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw GetInputError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// A Parquet source's row count, from its footer, checked; nil for other sources.
    private func parquetRows(_ source: Source) throws -> Int? {
        let wanted = columns.wanted.map(\.name)
        do {
            switch source {
            case .text(let bytes) where format == .parquet:
                return try ParquetReader(.bytes(bytes)).check(wanted)
            case .file(let path) where (format ?? InputFormat.of(path: path)) == .parquet:
                let fd = try open(path)
                defer { close(fd) }
                return try ParquetReader(.file(fd)).check(wanted)
            default:
                return nil
            }
        } catch let failure as ParquetReader.Failure {
            guard case .file(let path) = source else { throw GetInputError(message: "stdin: \(failure)") }
            throw GetInputError(message: "\(path): \(failure)")
        }
    }

    /// A Parquet table's rows, each an entry for `body`.
    private func rows(of source: ParquetReader.Source, _ table: InputTable, from index: inout Int, _ body: (GetEntry) throws -> Bool) throws -> Bool {
        let wanted = table.wanted
        var next = index
        defer { index = next }
        do {
            return try ParquetReader(source).forEachRow(wanted) { values in
                let entry = table.entry(index: next) { name in wanted.firstIndex(of: name).map { values[$0].json } }
                next += 1
                return try body(entry)
            }
        } catch let failure as ParquetReader.Failure {
            throw GetInputError(message: "\(table.source): \(failure)")
        }
    }

    /// A list line: an entry for `body`, or nothing (a blank or `#` line of a list, a table's
    /// header, a record that goes on).
    private func take(_ line: ArraySlice<UInt8>, _ table: inout InputTable, _ index: inout Int, _ body: (GetEntry) throws -> Bool) throws -> Bool {
        guard let entry = try table.take(line, index: index) else { return true }
        index += 1
        return try body(entry)
    }
}

public struct GetInputError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
