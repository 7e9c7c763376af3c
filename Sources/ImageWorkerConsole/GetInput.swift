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
            switch source {
            case .url(let url):
                guard try body(GetEntry(url: url, index: index, name: names[index])) else { return }
                index += 1
            case .text(let bytes):
                var table = InputTable(format: format ?? .txt, columns: columns, source: "stdin")
                if table.format == .parquet {
                    guard try rows(of: .bytes(bytes), table) else { return }
                    continue
                }
                guard try LineReader.lines(of: bytes[...], { line, _ in try take(line, &table) }) else { return }
            case .file(let path):
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw GetInputError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
                defer { close(fd) }
                var table = InputTable(format: format ?? InputFormat.of(path: path), columns: columns, source: path)
                if table.format == .parquet {
                    guard try rows(of: .file(fd), table) else { return }
                    continue
                }
                let going: Bool
                do {
                    going = try LineReader.lines(of: fd, pieceBytes: 1 << 16) { line, _ in try take(line, &table) }
                } catch let failure as LineReader.Failure {
                    throw GetInputError(message: "cannot read \(path): \(failure)")
                }
                guard going else { return }
            }
        }

        /// A Parquet table's rows, each an entry for `body`.
        func rows(of source: ParquetReader.Source, _ table: InputTable) throws -> Bool {
            let wanted = table.wanted
            do {
                return try ParquetReader(source).forEachRow(wanted) { values in
                    let entry = table.entry(index: index) { name in wanted.firstIndex(of: name).map { values[$0].json } }
                    index += 1
                    return try body(entry)
                }
            } catch let failure as ParquetReader.Failure {
                throw GetInputError(message: "\(table.source): \(failure)")
            }
        }

        /// A list line: an entry for `body`, or nothing (a blank or `#` line of a list, a table's
        /// header, a record that goes on).
        func take(_ line: ArraySlice<UInt8>, _ table: inout InputTable) throws -> Bool {
            guard let entry = try table.take(line, index: index) else { return true }
            index += 1
            return try body(entry)
        }
    }

    /// How many entries there are (a walk through them).
    public func count() throws -> Int {
        var n = 0
        try forEach { _ in
            n += 1
            return true
        }
        return n
    }
}

public struct GetInputError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
