import Foundation

/// Writing every byte to a file descriptor, the one loop the worker's writers share (stdout's
/// `WireWriter`, delivered files, `get`'s pipe to the server).
public enum FileDescriptorOutput {
    /// Writes all of `bytes`: retries when a signal interrupts, and waits (`poll`) while a
    /// non-blocking descriptor is full. False on any other error, with `errno` saying which.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, base + offset, bytes.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, -1)
            } else {
                return false
            }
        }
        return true
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }
}
