import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Responses on disk, one file per URL: the body, then the head (`CachedResponse` as JSON), then
/// an 8-byte trailer (the head's length, little-endian, and `IWC1`). A file is written under
/// `tmp/` and renamed into `entries/`, so a reader sees a whole entry or none, whatever crashes;
/// a reader keeps its open file even when another writer replaces or evicts it. Several workers
/// may share one directory: the file system is the only index, and every change is a rename or
/// an unlink. Eviction is least recently used first (a hit sets the file's mtime), by size.
///
/// The folder is untrusted (anyone who can write a shared cache folder can plant things in it):
/// below the directory the user named, nothing is followed. Every file operation goes through a
/// descriptor of its directory, each directory opened with `O_NOFOLLOW` from its parent's;
/// entries are opened `O_NOFOLLOW | O_NONBLOCK` and used only when they are regular files (a
/// FIFO or a device is removed as damaged, never waited on); eviction and the start-up cleanup
/// unlink names relative to their directory (a planted link is removed, never followed). An
/// entry larger than the whole cache is not stored.
public final class HTTPCache: Sendable {
    public let directory: String
    private let entries: String
    private let temporary: String
    let logger: Logger

    struct State {
        var maxBytes: Int64
        /// Bytes of entries this worker knows of (a scan at start, then its own writes); a scan
        /// corrects it whenever it passes `maxBytes`.
        var knownBytes: Int64 = 0
    }
    let state: NIOLockedValueBox<State>

    static let magic: [UInt8] = Array("IWC1".utf8)
    static let trailerBytes = 8
    /// Temporary files older than this are left by a worker that died: removed at start.
    static let staleTemporarySeconds: Double = 3600

    public init(directory: String, maxBytes: Int64, logger: Logger) throws {
        self.directory = directory
        self.entries = directory + "/v1/entries"
        self.temporary = directory + "/v1/tmp"
        self.logger = logger
        self.state = NIOLockedValueBox(State(maxBytes: maxBytes))
        // The folder the user named may be a link; below it, `v1`, `entries` and `tmp` must be
        // directories of their own (made when missing, never through a link).
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for path in [["v1", "entries"], ["v1", "tmp"]] {
            let fd = openDirectory(path, create: true)
            guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: directory + "/" + path.joined(separator: "/")]) }
            close(fd)
        }
        removeStaleTemporaryFiles()
        let total = scan().reduce(0) { $0 + $1.bytes }
        state.withLockedValue { $0.knownBytes = total }
    }

    public var maxBytes: Int64 { state.withLockedValue { $0.maxBytes } }

    // MARK: Directories, never through a link

    /// `components` below the cache's directory, opened one at a time with `O_NOFOLLOW`
    /// (`create`: made when missing); -1 when any is missing or not a real directory.
    func openDirectory(_ components: [String], create: Bool = false) -> Int32 {
        var fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        for name in components {
            guard fd >= 0 else { return -1 }
            if create { mkdirat(fd, name, 0o755) }
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(fd)
            fd = next
        }
        return fd
    }

    /// An entry's shard folder and file name.
    private func location(for url: String) -> (shard: String, name: String) {
        let digest = SHA256.hash(data: Data(url.utf8)).map { String(format: "%02x", $0) }.joined()
        return (String(digest.prefix(2)), digest)
    }

    public func setMaxBytes(_ value: Int64) {
        let over = state.withLockedValue { s -> Bool in
            s.maxBytes = value
            return s.knownBytes > value
        }
        if over { evict() }
    }

    /// Bytes and entries on disk now (a scan).
    public func usage() -> (bytes: Int64, entries: Int) {
        let all = scan()
        return (all.reduce(0) { $0 + $1.bytes }, all.count)
    }

    func path(for url: String) -> String {
        let (shard, name) = location(for: url)
        return "\(entries)/\(shard)/\(name)"
    }

    // MARK: Reading

    /// An open entry: its head and its body's file.
    public final class Entry: Sendable {
        public let response: CachedResponse
        let fd: Int32
        /// Its file.
        public let path: String

        init(response: CachedResponse, fd: Int32, path: String) {
            self.response = response
            self.fd = fd
            self.path = path
        }

        deinit { close(fd) }

        /// The body in chunks of up to `chunkBytes`, each handed to `body` before the next is read.
        public func readBody(chunkBytes: Int = 256 << 10, _ body: (ByteBuffer) async throws -> Void) async throws {
            var offset: Int64 = 0
            while offset < response.bodyBytes {
                let count = Int(min(Int64(chunkBytes), response.bodyBytes - offset))
                var buffer = ByteBufferAllocator().buffer(capacity: count)
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                    pread(fd, raw.baseAddress, count, off_t(offset))
                }
                guard read > 0 else { throw DownloadFailure.network(.io, "the cached copy of \(response.url) ended early") }
                offset += Int64(read)
                try await body(buffer)
            }
        }
    }

    /// The stored response for `url`, opened; nil when there is none (or it is damaged, or not a
    /// regular file: removed).
    public func lookup(_ url: String) -> Entry? {
        let (shard, name) = location(for: url)
        let path = "\(entries)/\(shard)/\(name)"
        let shardFD = openDirectory(["v1", "entries", shard])
        guard shardFD >= 0 else { return nil }
        defer { close(shardFD) }
        let fd = openat(shardFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            // A link or a FIFO planted under the entry's name: removed, never followed or waited on.
            if errno == ELOOP { unlinkat(shardFD, name, 0) }
            return nil
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= HTTPCache.trailerBytes else {
            close(fd)
            if info.st_mode & S_IFMT != S_IFREG { unlinkat(shardFD, name, 0) }
            return nil
        }
        let size = Int64(info.st_size)
        var trailer = [UInt8](repeating: 0, count: HTTPCache.trailerBytes)
        let headLength: Int
        do {
            guard pread(fd, &trailer, trailer.count, off_t(size) - off_t(trailer.count)) == trailer.count,
                Array(trailer[4...]) == HTTPCache.magic
            else { throw Damaged() }
            headLength = Int(UInt32(trailer[0]) | UInt32(trailer[1]) << 8 | UInt32(trailer[2]) << 16 | UInt32(trailer[3]) << 24)
            guard headLength > 0, Int64(headLength) + Int64(trailer.count) <= size else { throw Damaged() }
            var head = [UInt8](repeating: 0, count: headLength)
            guard pread(fd, &head, headLength, off_t(size) - off_t(trailer.count + headLength)) == headLength else { throw Damaged() }
            let response = try JSONDecoder().decode(CachedResponse.self, from: Data(head))
            guard response.bodyBytes == size - Int64(trailer.count + headLength), response.url == url else { throw Damaged() }
            return Entry(response: response, fd: fd, path: path)
        } catch {
            close(fd)
            logger.warning("removing a damaged cache entry", metadata: ["url": "\(url)"])
            unlinkat(shardFD, name, 0)
            return nil
        }
    }

    private struct Damaged: Error {}

    /// Marks an entry used now (least recently used goes first).
    public func touch(_ entry: Entry) {
        futimens(entry.fd, nil)
    }

    // MARK: Writing

    /// A response being stored: the body goes to a temporary file as it arrives; `commit` adds
    /// the head and renames it into place.
    public final class Writer: Sendable {
        let fd: Int32
        let path: String
        let cache: HTTPCache
        /// Bytes appended, and whether a write failed (the entry is then never stored).
        private let progress = NIOLockedValueBox<(written: Int64, failed: Bool)>((0, false))

        init(fd: Int32, path: String, cache: HTTPCache) {
            self.fd = fd
            self.path = path
            self.cache = cache
        }

        deinit {
            close(fd)
            cache.removeTemporary(path)  // harmless after a rename: the name is gone
        }

        public var bytesWritten: Int64 { progress.withLockedValue { $0.written } }

        /// Appends body bytes. A write that fails (disk full) makes the entry unusable, never the
        /// download.
        public func append(_ bytes: ByteBuffer) {
            guard !progress.withLockedValue({ $0.failed }) else { return }
            // Larger than the whole cache: it could only be stored by evicting everything, then
            // itself. Not written on (and not stored).
            if progress.withLockedValue({ $0.written }) + Int64(bytes.readableBytes) > cache.maxBytes {
                progress.withLockedValue { $0.failed = true }
                return
            }
            let ok = bytes.withUnsafeReadableBytes { raw in HTTPCache.writeAll(fd, raw) }
            progress.withLockedValue { ok ? ($0.written += Int64(bytes.readableBytes)) : ($0.failed = true) }
        }

        /// Finishes the entry with its head; returns whether it is now stored.
        @discardableResult
        public func commit(_ response: CachedResponse) -> Bool {
            guard !progress.withLockedValue({ $0.failed }) else { return false }
            var head = response
            head.bodyBytes = bytesWritten
            guard let json = try? JSONEncoder().encode(head) else { return false }
            let length = UInt32(json.count)
            let trailer = [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)] + HTTPCache.magic
            let ok =
                json.withUnsafeBytes { HTTPCache.writeAll(fd, $0) } && trailer.withUnsafeBytes { HTTPCache.writeAll(fd, $0) }
            guard ok else { return false }
            return cache.install(path, for: response.url, bytes: bytesWritten + Int64(json.count + trailer.count))
        }
    }

    /// Starts storing a response for `url`; nil when the temporary file cannot be made.
    public func beginStore() -> Writer? {
        let base = "\(getpid())-\(UInt64.random(in: 0...UInt64.max)).part"
        let name = "\(temporary)/\(base)"
        let tmpFD = openDirectory(["v1", "tmp"])
        let fd = tmpFD >= 0 ? openat(tmpFD, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644) : -1
        if tmpFD >= 0 { close(tmpFD) }
        guard fd >= 0 else {
            logger.warning("cannot write to the cache", metadata: ["directory": "\(directory)", "errno": "\(errno)"])
            return nil
        }
        return Writer(fd: fd, path: name, cache: self)
    }

    /// An entry whose body broke part-way, kept for the attempt that resumes it (`Range`): its
    /// writer, the head it will be stored with, and the validator the resumed response must match.
    public struct Parked: Sendable {
        public var writer: Writer
        public var head: CachedResponse
        public var validator: String?
    }

    /// Keeps a broken entry for its resumed attempt (at most `parkedLimit`, the oldest dropped).
    public func park(_ entry: Parked) {
        parked.withLockedValue { all in
            all.removeAll { $0.head.url == entry.head.url }
            all.append(entry)
            if all.count > HTTPCache.parkedLimit { all.removeFirst(all.count - HTTPCache.parkedLimit) }
        }
    }

    /// The broken entry of `url`, if it stopped at `offset` and has `validator`; it leaves the list
    /// either way.
    public func unpark(_ url: String, validator: String, offset: Int64) -> Parked? {
        let entry = parked.withLockedValue { all -> Parked? in
            guard let index = all.firstIndex(where: { $0.head.url == url }) else { return nil }
            return all.remove(at: index)
        }
        guard let entry, entry.validator == validator, entry.writer.bytesWritten == offset else { return nil }
        return entry
    }

    static let parkedLimit = 16
    private let parked = NIOLockedValueBox<[Parked]>([])

    /// Rewrites an entry with a new head (after a 304), its body copied; returns whether it worked.
    @discardableResult
    public func refresh(_ entry: Entry, with response: CachedResponse) -> Bool {
        guard let writer = beginStore() else { return false }
        var offset: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while offset < entry.response.bodyBytes {
            let count = Int(min(Int64(buffer.count), entry.response.bodyBytes - offset))
            let read = pread(entry.fd, &buffer, count, off_t(offset))
            guard read > 0 else { return false }
            writer.append(ByteBuffer(bytes: buffer[0..<read]))
            offset += Int64(read)
        }
        return writer.commit(response)
    }

    public func remove(_ url: String) {
        let (shard, name) = location(for: url)
        let shardFD = openDirectory(["v1", "entries", shard])
        guard shardFD >= 0 else { return }
        unlinkat(shardFD, name, 0)
        close(shardFD)
    }

    /// Unlinks a temporary file of this cache (by its name under `v1/tmp`).
    fileprivate func removeTemporary(_ temporaryPath: String) {
        let tmpFD = openDirectory(["v1", "tmp"])
        guard tmpFD >= 0 else { return }
        unlinkat(tmpFD, (temporaryPath as NSString).lastPathComponent, 0)
        close(tmpFD)
    }

    fileprivate func install(_ temporaryPath: String, for url: String, bytes: Int64) -> Bool {
        // What would not fit even alone is not stored: storing it would evict every other entry.
        guard bytes <= maxBytes else {
            logger.debug("not stored: larger than the cache", metadata: ["url": "\(url)", "bytes": "\(bytes)"])
            return false
        }
        let (shard, name) = location(for: url)
        let tmpFD = openDirectory(["v1", "tmp"])
        let shardFD = openDirectory(["v1", "entries", shard], create: true)
        defer {
            if tmpFD >= 0 { close(tmpFD) }
            if shardFD >= 0 { close(shardFD) }
        }
        guard tmpFD >= 0, shardFD >= 0, renameat(tmpFD, (temporaryPath as NSString).lastPathComponent, shardFD, name) == 0 else {
            logger.warning("cannot store a cache entry", metadata: ["url": "\(url)", "errno": "\(errno)"])
            return false
        }
        let over = state.withLockedValue { s -> Bool in
            s.knownBytes += bytes
            return s.knownBytes > s.maxBytes
        }
        if over { evict() }
        return true
    }

    static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
