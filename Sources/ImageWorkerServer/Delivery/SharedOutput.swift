import Foundation
import ImageDownloader
import Logging

/// `delivery: "shared"`: each payload is written to a file of its own in the worker's private
/// folder in `/dev/shm` (memory, not disk), and its event names the file; the client takes it
/// (opens, maps, unlinks) and the bytes never cross the pipe as base64. Small payloads (at most
/// `inlineLimit` bytes) go inline instead: a file costs more than their base64.
///
/// - The folder, `image-worker-PID-XXXXXX` (mode 0700), is made at the first use; it holds a
///   `.lock` file locked (`flock`) for the worker's life. A worker's start sweeps the folders of
///   workers that died without cleaning (SIGKILL): this user's, whose lock nobody holds. Nothing
///   there is followed: directories are opened with `O_NOFOLLOW` under a descriptor, files are
///   made with `O_EXCL | O_NOFOLLOW`, only regular files and links themselves are unlinked.
/// - Bounded: at most `maxImages` files and `maxBytes` bytes not yet taken (or a quarter of the
///   file system, if that is less); a delivery past it waits until the client takes some (woken
///   by inotify when a file leaves the folder; no polling). A client that never reads, or reads
///   slowly, holds the worker at that, not at all the memory its downloads would fill: a
///   container's small `/dev/shm` is not filled by images waiting for their reader. Once the
///   worker stops (stdin's end, `shutdown`, a signal: `stopWaiting`), what waits goes inline.
/// - At exit: when the reader is gone, every file left is removed with the folder; otherwise the
///   worker waits up to `exitGrace` for the client to take the files whose events it sent, then
///   removes what is left.
/// - Recycled memory: a client may move a file it took into `held/` (instead of unlinking it) and,
///   once nothing maps it, into `free/`. A later payload is written into the pages of the free
///   file nearest its size (renamed to its new name, then cut to its size) instead of fresh ones:
///   taking, charging and freeing a page at a time cost more than the copy itself. At most
///   `maxFreeFiles` free files of at most `maxFreeFileBytes` each, `freeByteCap` in all (64 MiB,
///   or an eighth of the file system if that is less: idle memory that other programs using a
///   small `/dev/shm`, such as data loaders, may need), are kept; the others are removed when found.
/// - Full: a payload is written only if a quarter of the file system (at most 1 GiB) stays free
///   after it (the room other programs on a small `/dev/shm` need: a container's is often 64 MB,
///   and a client may keep every image it took). Short of that, or when a write finds no room,
///   the free files are removed and it is tried once more; if there is still no room, `write`
///   says so and the payload goes inline (base64) instead. Nothing fails for want of shared
///   memory: a folder that cannot be made (a read-only `/dev/shm`, one out of inodes or not
///   writable by this user) or a write that fails for any reason sends the payload inline too,
///   said once in the log.
final class SharedOutput: Sendable {
    struct Limits: Sendable, Equatable {
        var maxImages = 64
        var maxBytes = 256 << 20
    }

    static let inlineLimit = 16 * 1024
    static let heldFolder = "held"
    static let freeFolder = "free"
    static let maxFreeFiles = 16
    static let maxFreeFileBytes = 16 << 20
    static let maxFreeBytes = 64 << 20

    static let exitGrace: Duration = .seconds(3)
    static let prefix = "image-worker-"

    struct Folder {
        var path: String
        var fd: Int32
        var lockFD: Int32
        /// `free/`: files the client gave back.
        var freeFD: Int32
        /// The file system's size (Int.max when unknown).
        var fileSystemBytes: Int
        /// What `free/` may hold (`freeByteCap`, from the file system's size).
        var freeByteCap: Int { SharedOutput.freeByteCap(fileSystemBytes: fileSystemBytes) }
    }

    struct State {
        var folder: Folder?
        /// Files reserved or written and not yet seen taken: name, size, and whether its bytes are
        /// in (until then a missing file is one still being made, not one the client took).
        var outstanding: [(name: String, bytes: Int, written: Bool)] = []
        var bytes = 0
        var next: UInt64 = 0
        var limits = Limits()
        var closed = false
        var swept = false
        /// Files in `free/` as last listed (name, size), and the folder's modification time and
        /// size then (on tmpfs a folder's size counts its entries: a change within one tick of
        /// the clock still shows).
        var free: [(name: String, bytes: Int)] = []
        var freeStamp: [Int]?
        /// Whether a write has found the file system full (said once in the log).
        var reportedFull = false
        /// No folder can be made (found once, said once): every payload goes inline.
        var unavailable = false
        /// Whether a write failed for another reason than room (said once in the log).
        var reportedFailure = false
        /// The worker is stopping: nothing waits for room any more (`stopWaiting`).
        var stopping = false
        /// Bumped whenever room may have come (a file left the folder, a file was discarded, the
        /// worker is stopping); `reserve`'s waiters, resumed then.
        var generation: UInt64 = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Tells of files leaving the folder (nil where inotify is not to be had: then waits poll).
        var watch: FolderWatch?
    }

    let root: String
    let warnings: WorkerWarnings
    /// Writes bytes to a file descriptor (`FileDescriptorOutput.writeAll`; a test's may fail).
    let writeAll: @Sendable (Int32, UnsafeRawBufferPointer) -> Bool
    /// The size and room of the file system of a descriptor (`FileSystemSpace.of`; a test's may
    /// tell of a small one).
    let space: @Sendable (Int32) -> FileSystemSpace?
    let state = LockedState(State())

    /// `root`: where the folder is made (`/dev/shm` when there is one, else the temporary folder).
    init(
        root: String = SharedOutput.defaultRoot, warnings: WorkerWarnings = WorkerWarnings(logger: Logger(label: "image-worker"), send: { _ in }),
        writeAll: @escaping @Sendable (Int32, UnsafeRawBufferPointer) -> Bool = { FileDescriptorOutput.writeAll($0, $1) },
        space: @escaping @Sendable (Int32) -> FileSystemSpace? = { FileSystemSpace.of($0) }
    ) {
        self.root = root
        self.warnings = warnings
        self.space = space
        self.writeAll = writeAll
    }

    /// Without `finish` (an instance dropped early, as tests do): the watch's thread ends too.
    deinit { state.withLock { $0.watch?.cancel() } }

    static var defaultRoot: String {
        var info = stat()
        if lstat("/dev/shm", &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return "/dev/shm" }
        return (NSTemporaryDirectory() as NSString).standardizingPath
    }

    func setLimits(_ limits: Limits) { state.withLock { $0.limits = limits } }

    /// Files written and not yet taken, and their bytes (for `status`).
    var pending: (files: Int, bytes: Int) { state.withLock { ($0.outstanding.count, $0.bytes) } }

    /// Writes `payload` to a new file (waiting while the limits are reached); its path (a payload
    /// that would go inline is an error here).
    func write(_ payload: Payload, fileExtension: String) async throws(DeliveryFailure) -> String {
        guard let reservation = try await reserve(payload.count, fileExtension: fileExtension), let path = write(payload, into: reservation)
        else {
            throw .output("no room in shared memory", path: nil)
        }
        return path
    }

    /// What `tryReserve` found.
    enum Room: Sendable {
        /// A file to write into.
        case reserved(Reservation)
        /// The limits are reached: wait for the client to take files (`reserve` does).
        case full
        /// No shared memory for this payload (no folder can be made, or the worker is stopping):
        /// deliver it inline.
        case unavailable
    }

    /// A new file's name, counted against the limits from now on (`reserve`), to be written once
    /// (`write(_:into:)`) or discarded.
    struct Reservation: Sendable {
        let name: String
        fileprivate let folder: Folder
        fileprivate let recycled: Bool

        var path: String { folder.path + "/" + name }
    }

    /// Writes `payload` into the reserved file; its path, or nil when it is to go inline: the
    /// file system has no room for it even without the free files, or would keep less than
    /// `reserveBytes` free after it, or the write failed (the reservation is then given back).
    func write(_ payload: Payload, into reservation: Reservation) -> String? {
        let (name, folder) = (reservation.name, reservation.folder)
        // A recycled file's pages are there already (its size within half of the payload's).
        let needed = reservation.recycled ? payload.count / 2 : payload.count
        let short = space(folder.fd).map { !Self.leavesRoom(needed, space: $0) } ?? false
        var attempt =
            short
            ? (ok: false, noRoom: true, reason: "less than a quarter of the file system (at most 1 GiB) would stay free")
            : writeFile(payload, name: name, in: folder, recycled: reservation.recycled)
        if attempt.noRoom, dropFree(folder) > 0 || short {
            // The free files' memory is what the file system lacked, perhaps: once more, afresh.
            unlinkat(folder.fd, name, 0)
            let room = space(folder.fd).map { Self.leavesRoom(payload.count, space: $0) } ?? true
            attempt = room ? writeFile(payload, name: name, in: folder, recycled: false) : attempt
        }
        guard attempt.ok else {
            unlinkat(folder.fd, name, 0)
            let firstTime = state.withLock { s -> Bool in
                _ = Self.forget(name, in: &s)
                if attempt.noRoom {
                    defer { s.reportedFull = true }
                    return !s.reportedFull
                }
                defer { s.reportedFailure = true }
                return !s.reportedFailure
            }
            if firstTime, attempt.noRoom {
                warnings.warn(
                    "sharedMemoryFull",
                    """
                    shared memory is full (or would have less than a quarter of it, at most 1 GiB, free): images that do not \
                    fit are delivered inline (base64), several times slower, until it has room. Keep fewer images alive (copy \
                    what you keep), or give /dev/shm more room: a container's is often 64 MB (docker run --shm-size=1g)
                    """,
                    details: ["folder": folder.path, "error": "\(attempt.reason)"])
            } else if firstTime {
                warnings.warn(
                    "sharedMemoryWriteFailed",
                    "cannot write to shared memory: images that fail to be written there are delivered inline (base64)",
                    details: ["folder": folder.path, "error": "\(attempt.reason)"])
            }
            return nil
        }
        state.withLock { s in
            if let index = s.outstanding.firstIndex(where: { $0.name == name }) { s.outstanding[index].written = true }
        }
        return reservation.path
    }

    /// One try at writing `payload` to `name` (into the free file renamed to it, when `recycled`).
    private func writeFile(_ payload: Payload, name: String, in folder: Folder, recycled: Bool) -> (ok: Bool, noRoom: Bool, reason: String) {
        var fd: Int32 = -1
        if recycled {
            fd = Self.openRecycled(name, in: folder.fd)
            if fd < 0 { unlinkat(folder.fd, name, 0) }
        }
        if fd < 0 { fd = openat(folder.fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else {
            let code = errno
            return (false, Self.isNoRoom(code), String(cString: strerror(code)))
        }
        var ok = payload.write(to: fd, with: writeAll)
        // A recycled file may have been longer.
        if ok, recycled { ok = ftruncate(fd, off_t(payload.count)) == 0 }
        let code = errno
        if close(fd) != 0, ok { return (false, false, String(cString: strerror(errno))) }
        return ok ? (true, false, "") : (false, Self.isNoRoom(code), String(cString: strerror(code)))
    }

    /// Errors that say the file system (or its quota) has no room.
    static func isNoRoom(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT || code == EFBIG || code == ENOMEM }

    /// A new file's name, counted against the limits, and whether it is a free file renamed to
    /// it: waits while the limits are reached (until the client takes a file); nil when the
    /// payload is to go inline (`Room.unavailable`). Throws only when the task is cancelled.
    func reserve(_ size: Int, fileExtension: String) async throws(DeliveryFailure) -> Reservation? {
        while true {
            if Task.isCancelled { throw .output("cancelled while waiting for shared memory", path: nil) }
            let (room, generation) = tryReserveCounting(size, fileExtension: fileExtension)
            switch room {
            case .reserved(let reservation): return reservation
            case .unavailable: return nil
            case .full: await waitForRoom(since: generation)
            }
        }
    }

    /// `reserve` without the wait.
    func tryReserve(_ size: Int, fileExtension: String) -> Room {
        tryReserveCounting(size, fileExtension: fileExtension).room
    }

    private func tryReserveCounting(_ size: Int, fileExtension: String) -> (room: Room, generation: UInt64) {
        let (room, generation, reason) = state.withLock { s -> (Room, UInt64, String?) in
            guard !s.closed, !s.unavailable else { return (.unavailable, s.generation, nil) }
            let folder: Folder
            do throws(DeliveryFailure) { folder = try openFolder(&s) } catch {
                s.unavailable = true
                return (.unavailable, s.generation, error.description)
            }
            if !fits(size, s) { reap(&s, folder) }
            guard fits(size, s) else { return (s.stopping ? .unavailable : .full, s.generation, nil) }
            s.next += 1
            let name = "\(s.next).\(fileExtension)"
            s.outstanding.append((name, size, false))
            s.bytes += size
            // Renamed here, under the lock: a listing of `free/` meanwhile cannot offer it again.
            let recycled = takeFree(&s, folder, size: size).map { renameat(folder.freeFD, $0, folder.fd, name) == 0 } ?? false
            return (.reserved(Reservation(name: name, folder: folder, recycled: recycled)), s.generation, nil)
        }
        if let reason {
            warnings.warn(
                "sharedMemoryUnavailable",
                "shared memory cannot be used: results asked for in shared memory are delivered inline (base64)",
                details: ["root": root, "error": "\(reason)"])
        }
        return (room, generation)
    }

    /// Removes a file this worker wrote whose event was never sent (its token ended first).
    func discard(_ path: String) {
        state.withLock { s in
            guard let folder = s.folder, path.hasPrefix(folder.path + "/") else { return }
            let name = String(path.dropFirst(folder.path.count + 1))
            guard Self.forget(name, in: &s) else { return }
            unlinkat(folder.fd, name, 0)
        }
        wakeWaiters()
    }

    /// At the worker's exit (see the type's comment). Nothing is written after it.
    func finish(readerGone: Bool) async {
        if !readerGone {
            let deadline = ContinuousClock.now + Self.exitGrace
            while ContinuousClock.now < deadline {
                let left = state.withLock { s -> Int in
                    if let folder = s.folder { reap(&s, folder) }
                    return s.outstanding.count
                }
                if left == 0 { break }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closed = true
            s.watch?.cancel()
            s.watch = nil
            let waiters = Self.changed(&s)
            guard let folder = s.folder else { return waiters }
            for file in s.outstanding { unlinkat(folder.fd, file.name, 0) }
            s.outstanding.removeAll()
            s.bytes = 0
            s.free.removeAll()
            close(folder.freeFD)
            Self.removeSubfolders(of: folder.fd)
            unlinkat(folder.fd, ".lock", 0)
            close(folder.lockFD)
            close(folder.fd)
            rmdir(folder.path)
            s.folder = nil
            return waiters
        }
        waiters.forEach { $0.resume() }
    }
}
