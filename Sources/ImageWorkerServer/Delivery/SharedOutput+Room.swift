import Foundation

/// How much of the file system shared memory may take: the caps on files not yet taken and on
/// given-back files, and the room every write leaves to other programs.
extension SharedOutput {
    /// The bytes `free/` may hold on a file system of `size` bytes: `maxFreeBytes`, or an eighth
    /// of the file system if that is less.
    static func freeByteCap(fileSystemBytes size: Int) -> Int { min(maxFreeBytes, size / 8) }

    /// The bytes of files not yet taken on a file system of `size` bytes: `maxBytes`, or a quarter
    /// of the file system if that is less (one larger file is still written when none waits).
    static func pendingByteCap(maxBytes: Int, fileSystemBytes size: Int) -> Int { min(maxBytes, size / 4) }

    /// What a write leaves free in a file system of `size` bytes, at least: a quarter of it, at
    /// most 1 GiB (a small `/dev/shm` keeps room for other programs; a large or disk-backed one
    /// is not held to a quarter of its size).
    static func reserveBytes(fileSystemBytes size: Int) -> Int { min(size / 4, 1 << 30) }

    static func leavesRoom(_ size: Int, space: FileSystemSpace) -> Bool {
        space.available - size >= reserveBytes(fileSystemBytes: space.size)
    }

    /// A file system's size and the bytes still available in it (`fstatvfs`).
    struct FileSystemSpace: Sendable, Equatable {
        var size: Int
        var available: Int

        static func of(_ fd: Int32) -> FileSystemSpace? {
            var fileSystem = statvfs()
            guard fstatvfs(fd, &fileSystem) == 0 else { return nil }
            let unit = Int(clamping: fileSystem.f_frsize)
            let size = Int(clamping: fileSystem.f_blocks).multipliedReportingOverflow(by: unit)
            let available = Int(clamping: fileSystem.f_bavail).multipliedReportingOverflow(by: unit)
            guard !size.overflow, !available.overflow else { return nil }
            return FileSystemSpace(size: size.partialValue, available: available.partialValue)
        }
    }
}
