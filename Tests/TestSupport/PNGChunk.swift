/// PNG chunks built by tests: a chunk's bytes (its length, or a claimed one, its type, its data
/// and the CRC-32 of type and data), and the CRC-32 itself for a header patched in place.
public enum PNGChunk {
    public static func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }

    public static func make(_ type: String, _ data: [UInt8], claimedLength: UInt32? = nil) -> [UInt8] {
        let length = claimedLength ?? UInt32(data.count)
        let body = Array(type.utf8) + data
        return withUnsafeBytes(of: length.bigEndian, Array.init) + body + withUnsafeBytes(of: crc32(body).bigEndian, Array.init)
    }
}
