import Foundation
import ImageDownloader
import Logging

/// The shared-memory folder: made at the first use, swept of dead workers' folders, and what
/// counts against its limits.
extension SharedOutput {
    func fits(_ size: Int, _ s: State) -> Bool {
        let maxBytes = Self.pendingByteCap(maxBytes: s.limits.maxBytes, fileSystemBytes: s.folder?.fileSystemBytes ?? Int.max)
        return s.outstanding.isEmpty || (s.outstanding.count < s.limits.maxImages && s.bytes + size <= maxBytes)
    }

    /// Forgets the files the client took (they are gone). A file still being written may not be
    /// there yet: it stays counted.
    func reap(_ s: inout State, _ folder: Folder) {
        var info = stat()
        s.outstanding.removeAll { file in
            guard file.written, fstatat(folder.fd, file.name, &info, AT_SYMLINK_NOFOLLOW) != 0, errno == ENOENT else { return false }
            s.bytes -= file.bytes
            return true
        }
    }

    /// Takes `name` off the files not yet taken; whether it was one.
    static func forget(_ name: String, in s: inout State) -> Bool {
        guard let index = s.outstanding.firstIndex(where: { $0.name == name }) else { return false }
        s.bytes -= s.outstanding[index].bytes
        s.outstanding.remove(at: index)
        return true
    }

    func openFolder(_ s: inout State) throws(DeliveryFailure) -> Folder {
        if let folder = s.folder { return folder }
        if !s.swept {
            s.swept = true
            Self.sweepOrphans(in: root)
        }
        var template = Array("\(root)/\(Self.prefix)\(getpid())-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw .output("cannot make a shared-memory folder in \(root): \(String(cString: strerror(errno)))", path: nil)
        }
        let path = String(cString: made)
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        let lockFD = fd >= 0 ? openat(fd, ".lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) : -1
        let subfolders = lockFD >= 0 && mkdirat(fd, Self.heldFolder, 0o700) == 0 && mkdirat(fd, Self.freeFolder, 0o700) == 0
        let freeFD = subfolders ? openat(fd, Self.freeFolder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1
        guard fd >= 0, lockFD >= 0, freeFD >= 0, flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
            let reason = String(cString: strerror(errno))
            if freeFD >= 0 { close(freeFD) }
            if lockFD >= 0 { close(lockFD) }
            if fd >= 0 {
                Self.removeSubfolders(of: fd)
                unlinkat(fd, ".lock", 0)
                close(fd)
            }
            rmdir(path)
            throw .output("cannot use the shared-memory folder \(path): \(reason)", path: nil)
        }
        let folder = Folder(path: path, fd: fd, lockFD: lockFD, freeFD: freeFD, fileSystemBytes: space(fd)?.size ?? Int.max)
        s.folder = folder
        s.watch = FolderWatch(path: path) { [weak self] in self?.wakeWaiters() }
        return folder
    }

    /// Removes the folders under `root` that workers of this user left when they died: a folder
    /// whose `.lock` nobody holds (or which has none and is over a minute old). Never follows a
    /// link; never touches another user's folder.
    static func sweepOrphans(in root: String) {
        let rootFD = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard rootFD >= 0 else { return }
        defer { close(rootFD) }
        for name in DirectoryListing.names(in: rootFD) where name.hasPrefix(prefix) {
            var info = stat()
            guard fstatat(rootFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else {
                continue
            }
            let fd = openat(rootFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            let lockFD = openat(fd, ".lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            let orphaned: Bool
            if lockFD >= 0 {
                orphaned = flock(lockFD, LOCK_EX | LOCK_NB) == 0
                close(lockFD)
            } else {
                orphaned = errno == ENOENT && time(nil) - info.st_mtim.tv_sec > 60
            }
            guard orphaned else { continue }
            removeSubfolders(of: fd)
            removeFiles(in: fd)
            unlinkat(rootFD, name, AT_REMOVEDIR)
        }
    }

    /// Removes everything in a folder that is not a directory (links themselves, not their
    /// targets); how many.
    @discardableResult
    static func removeFiles(in fd: Int32) -> Int {
        var removed = 0
        for file in DirectoryListing.names(in: fd) {
            var info = stat()
            guard fstatat(fd, file, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT != S_IFDIR else { continue }
            if unlinkat(fd, file, 0) == 0 { removed += 1 }
        }
        return removed
    }

    /// Removes a worker folder's `held/` and `free/` with the files in them (nothing else: no
    /// other directory is entered, no link followed).
    static func removeSubfolders(of fd: Int32) {
        for name in [heldFolder, freeFolder] {
            let sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard sub >= 0 else { continue }
            removeFiles(in: sub)
            close(sub)
            unlinkat(fd, name, AT_REMOVEDIR)
        }
    }
}
