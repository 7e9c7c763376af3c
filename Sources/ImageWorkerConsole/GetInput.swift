import Foundation

/// The URLs of a `get` run, read as they are fed, never all held: command-line arguments, list
/// files (read a piece at a time, each time they are walked) and a list from stdin (kept as its
/// bytes, as stdin cannot be read twice). Entries are numbered in this order from 0.
public struct GetInput: Sendable {
    public enum Source: Sendable {
        case url(String)
        /// A list file: one URL per line, optionally a tab and the file name (`GetEntry.parse`).
        case file(String)
        /// A list's text (stdin).
        case text([UInt8])
    }

    public var sources: [Source]

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
                var stop = false
                try Self.lines(of: bytes[...]) { line in
                    guard let entry = GetEntry.parse(line: line, index: index) else { return true }
                    index += 1
                    stop = try !body(entry)
                    return !stop
                }
                if stop { return }
            case .file(let path):
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw GetInputError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                var pending: [UInt8] = []
                var stop = false
                while !stop {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n < 0 { throw GetInputError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
                    if n == 0 { break }
                    pending += buffer[0..<n]
                    guard let lastNewline = pending.lastIndex(of: UInt8(ascii: "\n")) else { continue }
                    try Self.lines(of: pending[...lastNewline]) { line in
                        guard let entry = GetEntry.parse(line: line, index: index) else { return true }
                        index += 1
                        stop = try !body(entry)
                        return !stop
                    }
                    pending.removeFirst(lastNewline + 1)
                }
                if stop { return }
                if !pending.isEmpty, let entry = GetEntry.parse(line: String(decoding: pending, as: UTF8.self), index: index) {
                    guard try body(entry) else { return }
                    index += 1
                }
            }
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

    /// Each line of `bytes` (split at `\n`), as text, until `body` returns false.
    private static func lines(of bytes: ArraySlice<UInt8>, _ body: (String) throws -> Bool) throws {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            guard try body(String(decoding: bytes[start..<end], as: UTF8.self)) else { return }
            start = end < bytes.endIndex ? end + 1 : end
        }
    }
}

public struct GetInputError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
