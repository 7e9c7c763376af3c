import Foundation
import ImageWorkerServer

/// A POSIX ustar archive written member by member, the same bytes for the same members (no
/// time, owner or mode taken from the machine): what WebDataset shards are.
struct TarWriter {
    let fd: Int32

    /// One regular file; false when a write failed (errno says why). Names up to 100 bytes.
    func add(_ name: String, _ bytes: some Collection<UInt8>) -> Bool {
        var header = [UInt8](repeating: 0, count: 512)
        func put(_ text: String, at offset: Int) {
            for (i, byte) in text.utf8.enumerated() { header[offset + i] = byte }
        }
        let nameBytes = Array(name.utf8.prefix(100))
        header.replaceSubrange(0..<nameBytes.count, with: nameBytes)
        put("0000644", at: 100)  // mode
        put("0000000", at: 108)  // uid
        put("0000000", at: 116)  // gid
        put(Self.octal(bytes.count, digits: 11), at: 124)
        put("00000000000", at: 136)  // mtime: 0, so that a shard's bytes depend on its samples only
        header[156] = UInt8(ascii: "0")  // a regular file
        put("ustar", at: 257)
        put("00", at: 263)
        // The checksum: the header's bytes summed with its own field as spaces.
        for i in 148..<156 { header[i] = 0x20 }
        let sum = header.reduce(0) { $0 + Int($1) }
        put(Self.octal(sum, digits: 6), at: 148)
        header[154] = 0
        let padding = (512 - bytes.count % 512) % 512
        return write(header) && write(Array(bytes)) && write([UInt8](repeating: 0, count: padding))
    }

    /// The end of the archive: two empty blocks.
    func finish() -> Bool { write([UInt8](repeating: 0, count: 1024)) }

    private func write(_ bytes: [UInt8]) -> Bool { FileDescriptorOutput.writeAll(fd, bytes) }

    static func octal(_ value: Int, digits: Int) -> String {
        let text = String(value, radix: 8)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
