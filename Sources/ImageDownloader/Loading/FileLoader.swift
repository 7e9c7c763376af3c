import Foundation
import NIOCore

/// Reads `file://` URLs below the allowed root (see `FileURLPolicy`), in 64 KiB chunks.
public struct FileLoader: ResourceLoader {
    public let policy: FileURLPolicy
    public var chunkSize = 64 * 1024

    public init(policy: FileURLPolicy) {
        self.policy = policy
    }

    public func load(
        _ request: LoadRequest, onHead: @Sendable (LoadedHead) async throws -> Void, onChunk: @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        let path = try policy.resolve(request.url)
        // Non-blocking, so that opening a FIFO (or a device) returns at once instead of waiting
        // for a writer forever; only a regular file is read.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw DownloadFailure.network(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw DownloadFailure.invalidOperation("not a regular file: \(path)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        let size = Int64(info.st_size)
        var headers = [("Content-Length", String(size))]
        if let mime = FileLoader.mimeType(forExtension: (path as NSString).pathExtension) {
            headers.append(("Content-Type", mime))
        }
        try await onHead(LoadedHead(status: 200, headers: headers, finalURL: request.url, httpVersion: nil))
        var buffer = ByteBufferAllocator().buffer(capacity: chunkSize)
        while true {
            try Task.checkCancellation()
            buffer.clear()
            let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: chunkSize) { raw in
                read(fd, raw.baseAddress, chunkSize)
            }
            if n < 0 { throw DownloadFailure.network(.io, "read failed: \(String(cString: strerror(errno)))") }
            if n == 0 { return }
            try await onChunk(buffer)
        }
    }

    static func mimeType(forExtension ext: String) -> String? {
        switch ext.lowercased() {
        case "jpg", "jpeg", "jpe": return "image/jpeg"
        case "png": return "image/png"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "bmp": return "image/bmp"
        case "tif", "tiff": return "image/tiff"
        case "avif": return "image/avif"
        case "heic": return "image/heic"
        case "jxl": return "image/jxl"
        case "svg": return "image/svg+xml"
        case "ppm", "pgm", "pnm": return "image/x-portable-anymap"
        default: return nil
        }
    }
}
