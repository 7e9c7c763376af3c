import Foundation
import NIOCore

/// The bytes a token delivers: a fetched body as it came, or an image as rendered (PNG bytes, raw
/// pixels; an animation's raw frames as the parts they were decoded in, one after the other). Held
/// as they were made and read in place: never copied into another buffer on the way to a file or
/// nowhere (`write(to:)`, `sha256`); only a base64 string of parts joins them first.
struct Payload: Sendable {
    private enum Storage: Sendable {
        case buffer(ByteBuffer)
        case bytes([UInt8])
        case parts([[UInt8]])
    }

    private let storage: Storage

    init(_ buffer: ByteBuffer) { storage = .buffer(buffer) }
    init(_ bytes: [UInt8]) { storage = .bytes(bytes) }
    /// The parts' bytes one after the other (one part: as `init(_:)` of its bytes).
    init(parts: [[UInt8]]) { storage = parts.count == 1 ? .bytes(parts[0]) : .parts(parts) }

    var count: Int {
        switch storage {
        case .buffer(let buffer): return buffer.readableBytes
        case .bytes(let bytes): return bytes.count
        case .parts(let parts): return parts.reduce(0) { $0 + $1.count }
        }
    }

    /// Each run of bytes where it lies, in order (one for a single buffer).
    func forEachPart(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        switch storage {
        case .buffer(let buffer): try buffer.withUnsafeReadableBytes(body)
        case .bytes(let bytes): try bytes.withUnsafeBytes(body)
        case .parts(let parts): for part in parts { try part.withUnsafeBytes(body) }
        }
    }

    /// Writes every byte to `fd` with `writeAll`; false when a write fails (errno says why).
    func write(
        to fd: Int32, with writeAll: (Int32, UnsafeRawBufferPointer) -> Bool = { FileDescriptorOutput.writeAll($0, $1) }
    ) -> Bool {
        var ok = true
        forEachPart { raw in ok = ok && writeAll(fd, raw) }
        return ok
    }

    /// The bytes' SHA-256 in hex.
    func sha256() -> String {
        var hash = SHA256()
        forEachPart { hash.update($0) }
        return hash.finalizeHex()
    }

    /// The bytes in one run (parts joined into a new buffer).
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .buffer(let buffer): return try buffer.withUnsafeReadableBytes(body)
        case .bytes(let bytes): return try bytes.withUnsafeBytes(body)
        case .parts(let parts): return try Array(parts.joined()).withUnsafeBytes(body)
        }
    }

    /// Base64 of the bytes, read where they lie.
    func base64() -> String {
        withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return "" }
            return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: raw.count, deallocator: .none).base64EncodedString()
        }
    }
}
