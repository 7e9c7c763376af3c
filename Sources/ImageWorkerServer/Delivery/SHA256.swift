import Crypto

/// SHA-256 of delivered and received bytes, for `output.sha256`, `sourceSha256` and `{sha256}`
/// names, as lowercase hexadecimal: swift-crypto's (BoringSSL's, with the CPU's SHA extensions
/// where it has them), which the HTTP cache already links. A dataset hashes every original and
/// every image it writes; a portable Swift implementation was 13% of such a run's CPU.
struct SHA256: Sendable {
    private var hash = Crypto.SHA256()

    init() {}

    /// The digest of `bytes` as 64 lowercase hexadecimal digits.
    static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        var hash = SHA256()
        hash.update(bytes)
        return hash.finalizeHex()
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { hex($0) } }

    mutating func update(_ bytes: UnsafeRawBufferPointer) { hash.update(bufferPointer: bytes) }

    mutating func finalizeHex() -> String {
        let digest = hash.finalize()
        var text = [UInt8]()
        text.reserveCapacity(64)
        let digits = Array("0123456789abcdef".utf8)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
