import Foundation
import ImageWorkerProtocol

/// What `--continue` needs of an earlier manifest, read a line at a time: for each record that
/// shows its URL as done (`ok` or `skipped`, its file still there), a 128-bit digest of its key,
/// its index and where its line is, 32 bytes in a sorted array whatever the record's size. A
/// record is read again from the file only when it is carried over (2,000,000 records held as
/// parsed JSON took 1.5 GB). Later records of a key and index replace earlier ones, as in the
/// manifest's own rules.
public struct ManifestIndex: Sendable {
    struct Digest: Hashable, Comparable {
        var high: UInt64
        var low: UInt64

        /// Two FNV-1a passes with different bases: accidental collisions among millions of keys
        /// are out of reach (the manifest is the user's own file, not an adversary's).
        init(_ text: String) {
            var a: UInt64 = 0xcbf2_9ce4_8422_2325
            var b: UInt64 = 0x8422_2325_cbf2_9ce4
            for byte in text.utf8 {
                a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
                b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_0193 &+ 0x9e37_79b9
            }
            (high, low) = (a, b)
        }

        static func < (x: Digest, y: Digest) -> Bool { (x.high, x.low) < (y.high, y.low) }
    }

    struct Entry {
        var digest: Digest
        var offset: Int64
        var index: Int32
        /// The line's length; negative while reading: a record that does not show its URL done.
        var length: Int32
    }

    private let fd: Int32
    /// Done records, by digest then index.
    private let entries: [Entry]
    /// Records read, and those that show their URL as done.
    public let records: Int

    /// Reads `path` through. Lines that do not parse (one cut by a kill) are left out.
    public init(path: String) throws {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ManifestError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
        do {
            (entries, records) = try Self.read(fd)
        } catch {
            _ = Foundation.close(fd)
            throw ManifestError(message: "cannot read \(path): \(error)")
        }
    }

    /// Every record's entry, then the done ones, the last record of each key and index deciding.
    private static func read(_ fd: Int32) throws -> (entries: [Entry], records: Int) {
        var all: [Entry] = []
        try LineReader.lines(of: fd) { line, offset in
            guard line.count < Int32.max, let fields = fields(line), let index = Int32(exactly: fields.index) else { return true }
            let fileThere = fields.path.map { FileManager.default.fileExists(atPath: $0) } ?? true
            let done = (fields.outcome == "ok" || fields.outcome == "skipped") && fileThere
            let length = Int32(line.count)
            all.append(Entry(digest: Digest(Manifest.key(url: fields.url, name: fields.name)), offset: offset, index: index, length: done ? length : -length - 1))
            return true
        }
        all.sort { ($0.digest, $0.index, $0.offset) < ($1.digest, $1.index, $1.offset) }
        var kept: [Entry] = []
        kept.reserveCapacity(all.count)
        for (i, entry) in all.enumerated() {
            if i + 1 < all.count, all[i + 1].digest == entry.digest, all[i + 1].index == entry.index { continue }
            if entry.length >= 0 { kept.append(entry) }
        }
        return (kept, all.count)
    }

    /// The done records of a key: a range of `entries`.
    private func range(of digest: Digest) -> Range<Int> {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].digest < digest { low = mid + 1 } else { high = mid }
        }
        var end = low
        while end < entries.count, entries[end].digest == digest { end += 1 }
        return low..<end
    }

    private func entry(url: String, name: String?, index: Int) -> Entry? {
        let found = entries[range(of: Digest(Manifest.key(url: url, name: name)))]
        return found.first { Int($0.index) == index } ?? found.first
    }

    /// Whether an input line is done (no reading).
    public func contains(url: String, name: String?, index: Int) -> Bool {
        entry(url: url, name: name, index: index) != nil
    }

    /// The done record for an input line, as its line in the new manifest: the one of its index
    /// (copied as it is), else another of its URL (the list changed), under this index.
    public func take(url: String, name: String?, index: Int) -> [UInt8]? {
        guard let entry = entry(url: url, name: name, index: index) else { return nil }
        var line = [UInt8](repeating: 0, count: Int(entry.length))
        let n = line.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(entry.offset)) }
        guard n == Int(entry.length) else { return nil }
        if Int(entry.index) == index { return line + [UInt8(ascii: "\n")] }
        guard case .object(var record)? = try? JSONParser.parse(line) else { return nil }
        record["index"] = JSONValue(index)
        return Manifest.line(record)
    }

    public func close() {
        _ = Foundation.close(fd)
    }

    private static let wantedKeys = ["index", "url", "name", "outcome", "path"].map { Array($0.utf8) }

    /// The fields the index needs of a record, read without building its whole JSON: a top-level
    /// object scanned key by key, other values skipped (strings and nesting respected); the
    /// strings it keeps decoded by the JSON parser. Nil when the line is not such an object or
    /// lacks `index` or `url`.
    public static func fields(_ line: ArraySlice<UInt8>) -> (index: Int64, url: String, name: String?, outcome: String?, path: String?)? {
        var i = line.startIndex
        let end = line.endIndex
        func skipBlanks() { while i < end, line[i] == 0x20 || line[i] == 0x09 || line[i] == 0x0D || line[i] == 0x0A { i += 1 } }
        func string(_ range: Range<Int>) -> String? {
            // Without escapes (the usual URL or path), the bytes between the quotes are the text.
            if range.count >= 2, line[range.lowerBound] == UInt8(ascii: "\""), line[range.upperBound - 1] == UInt8(ascii: "\""),
                !line[range.lowerBound + 1..<range.upperBound - 1].contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 })
            {
                return String(decoding: line[range.lowerBound + 1..<range.upperBound - 1], as: UTF8.self)
            }
            guard case .string(let text)? = try? JSONParser.parse(line[range]) else { return nil }
            return text
        }
        skipBlanks()
        guard i < end, line[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var index: Int64?
        var url: String?
        var name: String?
        var outcome: String?
        var path: String?
        while true {
            skipBlanks()
            guard i < end else { return nil }
            if line[i] == UInt8(ascii: "}") { break }
            guard line[i] == UInt8(ascii: "\""), let keyEnd = JSONParser.valueEnd(in: line, from: i) else { return nil }
            // The keys wanted have no escapes: compared as bytes, no string made for the others.
            let keyBytes = line[(i + 1)..<(keyEnd - 1)]
            let key = Self.wantedKeys.first { $0.elementsEqual(keyBytes) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            i = keyEnd
            skipBlanks()
            guard i < end, line[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipBlanks()
            guard let valueEnd = JSONParser.valueEnd(in: line, from: i), valueEnd > i else { return nil }
            let value = i..<valueEnd
            switch key {
            case "index":
                var digits = line[value]
                while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
                if !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                    index = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
                } else {
                    guard case .int(let n)? = try? JSONParser.parse(line[value]) else { return nil }
                    index = n
                }
            case "url": url = string(value)
            case "name": name = string(value)
            case "outcome": outcome = string(value)
            case "path": path = string(value)
            default: break
            }
            i = valueEnd
            skipBlanks()
            guard i < end else { return nil }
            if line[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard line[i] == UInt8(ascii: "}") else { return nil }
            break
        }
        guard let index, let url else { return nil }
        return (index, url, name, outcome, path)
    }
}
