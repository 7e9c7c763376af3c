import Foundation
import ImageDownloader
import Logging

/// Files a client gave back (`free/`): a payload is written into the pages of the one nearest its
/// size instead of fresh pages.
extension SharedOutput {
    /// Removes the files in `free/` (their memory may be what a write lacks); how many.
    func dropFree(_ folder: Folder) -> Int {
        state.withLock { s -> Int in
            s.free.removeAll()
            s.freeStamp = nil
            return Self.removeFiles(in: folder.freeFD)
        }
    }

    /// A recycled file, renamed to `name`, opened for writing: only a regular file (no link is
    /// followed, and a FIFO put there does not block the open); -1 otherwise.
    static func openRecycled(_ name: String, in folderFD: Int32) -> Int32 {
        let fd = openat(folderFD, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// The free file nearest `size`, taken off the list, when it is within half of `size` (the
    /// pages it lacks are taken, those past `size` freed: a file far off saves little, and kept
    /// it may suit a later image); `free/` is listed again when it changed since.
    func takeFree(_ s: inout State, _ folder: Folder, size: Int) -> String? {
        var info = stat()
        if fstat(folder.freeFD, &info) == 0 {
            let stamp = [info.st_mtim.tv_sec, info.st_mtim.tv_nsec, Int(info.st_size)]
            if stamp != s.freeStamp {
                s.freeStamp = stamp
                s.free = Self.listFree(folder.freeFD, cap: folder.freeByteCap)
            }
        }
        guard let best = s.free.indices.min(by: { abs(s.free[$0].bytes - size) < abs(s.free[$1].bytes - size) }),
            abs(s.free[best].bytes - size) <= size / 2
        else { return nil }
        return s.free.remove(at: best).name
    }

    /// The regular files in `free/` the worker keeps (at most `maxFreeFiles`, each at most
    /// `maxFreeFileBytes`, `cap` bytes in all); anything else there that is not a directory is
    /// removed.
    static func listFree(_ freeFD: Int32, cap: Int) -> [(name: String, bytes: Int)] {
        var kept: [(name: String, bytes: Int)] = []
        var keptBytes = 0
        for name in DirectoryListing.names(in: freeFD) {
            var info = stat()
            guard fstatat(freeFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT != S_IFDIR else { continue }
            let bytes = Int(info.st_size)
            if info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1, kept.count < maxFreeFiles, bytes <= maxFreeFileBytes,
                keptBytes + bytes <= cap
            {
                kept.append((name, bytes))
                keptBytes += bytes
            } else {
                unlinkat(freeFD, name, 0)
            }
        }
        return kept
    }
}
