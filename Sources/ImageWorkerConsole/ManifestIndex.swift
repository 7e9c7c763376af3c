import Foundation
import ImageWorkerProtocol

/// What `--continue` needs of an earlier manifest, read a line at a time: for each record that
/// shows its URL as done (`ok` or `skipped`, its file still there), a 128-bit digest of its key,
/// its index and where its line is. About 32 bytes a record in the table, whatever its size: the record itself
/// is read again from the file when it is carried over (2,000,000 records held as parsed JSON took
/// 1.5 GB). Later records of a key and index replace earlier ones, as in `Manifest.done`.
public struct ManifestIndex: Sendable {
    struct Digest: Hashable {
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
    }

    struct Ref: Equatable {
        var offset: Int64
        var index: Int32
        var length: Int32
    }

    private let fd: Int32
    /// The refs of a key: one for most keys; more when the list named the URL more than once.
    private var single: [Digest: Ref] = [:]
    private var several: [Digest: [Ref]] = [:]
    /// Records read, and those that show their URL as done.
    public private(set) var records = 0
    public var doneCount: Int { single.count + several.values.reduce(0) { $0 + $1.count } }

    /// Reads `path` through. Lines that do not parse (one cut by a kill) are left out.
    public init(path: String) throws {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ManifestError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var pending: [UInt8] = []
        var offset: Int64 = 0  // of pending's first byte
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw ManifestError(message: "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            pending += buffer[0..<n]
            var start = 0
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                take(pending[start..<newline], at: offset + Int64(start))
                start = newline + 1
            }
            pending.removeFirst(start)
            offset += Int64(start)
        }
        if !pending.isEmpty { take(pending[...], at: offset) }
    }

    private mutating func take(_ line: ArraySlice<UInt8>, at offset: Int64) {
        guard line.count < Int32.max, case .object(let record)? = try? JSONParser.parse(line), let url = record["url"]?.stringValue,
            let index = record["index"]?.integerValue.flatMap({ Int32(exactly: $0) })
        else { return }
        records += 1
        let digest = Digest(Manifest.key(url: url, name: record["name"]?.stringValue))
        let outcome = record["outcome"]?.stringValue
        let fileThere = record["path"]?.stringValue.map { FileManager.default.fileExists(atPath: $0) } ?? true
        let done = (outcome == "ok" || outcome == "skipped") && fileThere
        let ref = Ref(offset: offset, index: index, length: Int32(line.count))
        var refs = several[digest] ?? single[digest].map { [$0] } ?? []
        refs.removeAll { $0.index == index }
        if done { refs.append(ref) }
        switch refs.count {
        case 0:
            single[digest] = nil
            several[digest] = nil
        case 1:
            single[digest] = refs[0]
            several[digest] = nil
        default:
            single[digest] = nil
            several[digest] = refs
        }
    }

    /// The done record for an input line: the one of its index, else another of its URL (the list
    /// changed), under this index; its line as it is to be written in the new manifest.
    public func take(url: String, name: String?, index: Int) -> (record: JSONObject, line: [UInt8])? {
        let digest = Digest(Manifest.key(url: url, name: name))
        let refs = several[digest] ?? single[digest].map { [$0] } ?? []
        guard let ref = refs.first(where: { Int($0.index) == index }) ?? refs.first else { return nil }
        var line = [UInt8](repeating: 0, count: Int(ref.length))
        let n = line.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(ref.offset)) }
        guard n == Int(ref.length), case .object(var record)? = try? JSONParser.parse(line),
            Manifest.key(url: record["url"]?.stringValue ?? "", name: record["name"]?.stringValue) == Manifest.key(url: url, name: name)
        else { return nil }
        if Int(ref.index) == index { return (record, line + [UInt8(ascii: "\n")]) }
        record["index"] = JSONValue(index)
        return (record, Manifest.line(record))
    }

    public func close() {
        _ = Foundation.close(fd)
    }
}
