import Foundation
import NIOCore

/// The bytes a token delivers: a fetched body as it came, or an image as rendered (PNG bytes, raw
/// pixels). Held as they were made and read in place: never copied into another buffer on the
/// way to a file, a base64 string or nowhere.
struct Payload: Sendable {
    private enum Storage: Sendable {
        case buffer(ByteBuffer)
        case bytes([UInt8])
    }

    private let storage: Storage

    init(_ buffer: ByteBuffer) { storage = .buffer(buffer) }
    init(_ bytes: [UInt8]) { storage = .bytes(bytes) }

    var count: Int {
        switch storage {
        case .buffer(let buffer): return buffer.readableBytes
        case .bytes(let bytes): return bytes.count
        }
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .buffer(let buffer): return try buffer.withUnsafeReadableBytes(body)
        case .bytes(let bytes): return try bytes.withUnsafeBytes(body)
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
