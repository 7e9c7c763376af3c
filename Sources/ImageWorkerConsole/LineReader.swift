import Foundation

/// The lines of bytes or of a file, a piece at a time (a list or manifest of millions of lines is
/// never held whole): `\n` ends a line and is not part of it; a last line without one still
/// counts. Each line comes with the offset of its first byte. A walk stops when `body` returns
/// false, and then returns false itself.
enum LineReader {
    struct Failure: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    @discardableResult
    static func lines(of bytes: ArraySlice<UInt8>, from offset: Int64 = 0, _ body: (ArraySlice<UInt8>, Int64) throws -> Bool) rethrows -> Bool {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            guard try body(bytes[start..<end], offset + Int64(start - bytes.startIndex)) else { return false }
            start = end < bytes.endIndex ? end + 1 : end
        }
        return true
    }

    /// The lines of the file open at `fd`, read `pieceBytes` at a time; throws why a read failed.
    @discardableResult
    static func lines(of fd: Int32, pieceBytes: Int = 1 << 20, _ body: (ArraySlice<UInt8>, Int64) throws -> Bool) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: pieceBytes)
        var pending: [UInt8] = []
        var offset: Int64 = 0  // of pending's first byte
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw Failure(reason: String(cString: strerror(errno))) }
            if n == 0 { break }
            // Only the new bytes are searched: a long line is scanned once, not once a piece.
            guard let newlineInPiece = buffer[0..<n].lastIndex(of: UInt8(ascii: "\n")) else {
                pending += buffer[0..<n]
                continue
            }
            let lastNewline = pending.count + newlineInPiece
            pending += buffer[0..<n]
            guard try lines(of: pending[...lastNewline], from: offset, body) else { return false }
            pending.removeFirst(lastNewline + 1)
            offset += Int64(lastNewline + 1)
        }
        return pending.isEmpty ? true : try body(pending[...], offset)
    }
}
