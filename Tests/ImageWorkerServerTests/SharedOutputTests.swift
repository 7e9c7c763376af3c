import Foundation
import Synchronization
import Testing

@testable import ImageWorkerServer

/// `SharedOutput` in a temporary root: files written, bounded until taken, a result nobody will
/// be told of removed, everything removed at the end.
@Suite struct SharedOutputTests {
    /// The worker's shared-memory folder: where it wrote `path`.
    static func folder(of path: String) -> String { (path as NSString).deletingLastPathComponent }

    private func root() throws -> String {
        let dir = NSTemporaryDirectory() + "shared-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func writesWaitForTheClientToTakeFilesAndDiscardedOnesGo() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 2, maxBytes: 1 << 20))
        let a = try await shared.write(Payload(Array(repeating: 1, count: 100)), fileExtension: "rgba")
        let b = try await shared.write(Payload(Array(repeating: 2, count: 100)), fileExtension: "rgba")
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(repeating: 1, count: 100))
        #expect(shared.pending.files == 2 && shared.pending.bytes == 200)
        // A third waits until one is taken (unlinked by the client).
        let third = Task { try await shared.write(Payload(Array(repeating: 3, count: 100)), fileExtension: "rgba") }
        try await Task.sleep(for: .milliseconds(100))
        #expect(shared.pending.files == 2, "held at the limit")
        unlink(a)
        let c = try await third.value
        #expect(FileManager.default.fileExists(atPath: c))
        // A result whose event is never sent: removed, and its place freed.
        shared.discard(b)
        #expect(!FileManager.default.fileExists(atPath: b))
        shared.discard("/etc/passwd")  // not one of its files: nothing happens
        #expect(FileManager.default.fileExists(atPath: "/etc/passwd"))
        let folder = Self.folder(of: c)
        await shared.finish(readerGone: true)
        #expect(!FileManager.default.fileExists(atPath: folder), "the folder goes at the end")
        await #expect(throws: DeliveryFailure.self) {
            _ = try await shared.write(Payload([1]), fileExtension: "bin")
        }
    }

    /// `tryReserve` (what a decode thread writes through when the client has room): a name at
    /// once while the limits allow, nil at them (after looking for files the client took), an
    /// error once the worker is stopping; what it reserves counts like `reserve`'s.
    @Test func tryReserveNeverWaits() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 2, maxBytes: 250))
        let first = try #require(shared.tryReserve(100, fileExtension: "rgba").reservation)
        let a = try #require(shared.write(Payload(Array(repeating: 1, count: 100)), into: first))
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(repeating: 1, count: 100))
        #expect(shared.tryReserve(200, fileExtension: "rgba").isFull, "over the bytes")
        let second = try #require(shared.tryReserve(100, fileExtension: "rgba").reservation)
        #expect(shared.tryReserve(10, fileExtension: "rgba").isFull, "at the file count")
        #expect(shared.pending.files == 2 && shared.pending.bytes == 200)
        // The waiting kind waits for the same room.
        let waiting = Task { try await shared.write(Payload(Array(repeating: 3, count: 10)), fileExtension: "rgba") }
        try await Task.sleep(for: .milliseconds(50))
        #expect(shared.pending.files == 2)
        unlink(a)
        _ = shared.write(Payload(Array(repeating: 2, count: 100)), into: second)
        let c = try await waiting.value
        #expect(FileManager.default.fileExists(atPath: c))
        #expect(shared.tryReserve(10, fileExtension: "rgba").isFull, "the second and third are not taken")
        await shared.finish(readerGone: true)
        #expect(shared.tryReserve(10, fileExtension: "rgba").reservation == nil, "stopped: inline from now on")
    }

    /// A client gives a file back (`held/`, then `free/`): the next payload is written into it,
    /// cut to its own size; nothing in `free/` but a regular file is used, and extras are removed.
    /// A file reserved and still being written counts against the limits: that it is not in the
    /// folder yet does not make it one the client took.
    @Test func aFileBeingWrittenStillCounts() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 2, maxBytes: 1 << 20))
        let writing = try #require(try await shared.reserve(100, fileExtension: "rgba"))
        let a = try await shared.write(Payload(Array(repeating: 1, count: 100)), fileExtension: "rgba")
        let third = Task { try await shared.write(Payload(Array(repeating: 3, count: 100)), fileExtension: "rgba") }
        try await Task.sleep(for: .milliseconds(100))
        let folder = Self.folder(of: a)
        func files() -> Set<String> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") && $0 != "held" && $0 != "free" })
        }
        #expect(files() == [(a as NSString).lastPathComponent], "the third waits: two are counted")
        let b = try #require(shared.write(Payload(Array(repeating: 2, count: 100)), into: writing))
        #expect(try Data(contentsOf: URL(fileURLWithPath: b)) == Data(repeating: 2, count: 100))
        #expect(shared.pending.files == 2)
        unlink(a)
        let c = try await third.value
        #expect(files() == [(b as NSString).lastPathComponent, (c as NSString).lastPathComponent])
        await shared.finish(readerGone: true)
    }

    @Test func filesGivenBackAreWrittenAgain() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        let first = try await shared.write(Payload(Array(repeating: 1, count: 300)), fileExtension: "rgba")
        let folder = Self.folder(of: first)
        let name = (first as NSString).lastPathComponent
        func inode(_ path: String) -> UInt {
            var info = stat()
            return lstat(path, &info) == 0 ? UInt(info.st_ino) : 0
        }
        let firstInode = inode(first)
        // Taken: held while mapped (no longer counted as waiting), then free.
        #expect(rename(first, "\(folder)/held/\(name)") == 0)
        #expect(rename("\(folder)/held/\(name)", "\(folder)/free/\(name)") == 0)
        // A payload far from its size (more than half of its own): a new file, the free one kept.
        let far = try await shared.write(Payload(Array(repeating: 5, count: 100)), fileExtension: "rgba")
        #expect(inode(far) != firstInode)
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(folder)/free") == [name])
        unlink(far)
        let second = try await shared.write(Payload(Array(repeating: 2, count: 250)), fileExtension: "rgba")
        #expect(inode(second) == firstInode, "written into the file given back")
        #expect(try Data(contentsOf: URL(fileURLWithPath: second)) == Data(repeating: 2, count: 250), "cut to its size")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(folder)/free").isEmpty)
        unlink(second)

        // What else a client (or anyone of this user) could put there: a link, a FIFO (whose open
        // for writing would block), a directory, a file with a second name. None is written to.
        let victim = root + "/precious"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("keep".utf8)))
        #expect(symlink(victim, "\(folder)/free/link") == 0)
        #expect(mkfifo("\(folder)/free/fifo", 0o600) == 0)
        #expect(mkdir("\(folder)/free/dir", 0o700) == 0)
        #expect(FileManager.default.createFile(atPath: root + "/linked", contents: Data("also".utf8)))
        #expect(link(root + "/linked", "\(folder)/free/linked") == 0)
        let third = try await shared.write(Payload(Array(repeating: 3, count: 50)), fileExtension: "rgba")
        #expect(try Data(contentsOf: URL(fileURLWithPath: third)) == Data(repeating: 3, count: 50))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        #expect(try String(contentsOfFile: root + "/linked", encoding: .utf8) == "also")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(folder)/free") == ["dir"], "the others are removed")
        unlink(third)

        // More than the worker keeps: the extras go when it next lists the folder.
        for n in 0..<(SharedOutput.maxFreeFiles + 5) {
            #expect(FileManager.default.createFile(atPath: "\(folder)/free/x\(n)", contents: Data(repeating: 9, count: 10 + n)))
        }
        let fourth = try await shared.write(Payload(Array(repeating: 4, count: 12)), fileExtension: "rgba")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fourth)) == Data(repeating: 4, count: 12))
        let left = try FileManager.default.contentsOfDirectory(atPath: "\(folder)/free").filter { $0 != "dir" }
        #expect(left.count == SharedOutput.maxFreeFiles - 1, "kept at most maxFreeFiles, one written again")
        for name in left { unlink("\(folder)/free/\(name)") }

        // More bytes than the worker keeps (files of apparent size only: sparse, no memory):
        // the files past its cap (64 MiB, or an eighth of this file system) go, in whatever
        // order the folder lists them.
        var fileSystem = statvfs()
        #expect(statvfs(folder, &fileSystem) == 0)
        let cap = SharedOutput.freeByteCap(fileSystemBytes: Int(fileSystem.f_blocks) * Int(fileSystem.f_frsize))
        let big = SharedOutput.maxFreeFileBytes - 1
        let count = cap / big + 2
        for n in 0..<count {
            let fd = open("\(folder)/free/big\(n)", O_WRONLY | O_CREAT | O_EXCL, 0o600)
            #expect(fd >= 0 && ftruncate(fd, off_t(big)) == 0)
            close(fd)
        }
        let small = try await shared.write(Payload(Array(repeating: 6, count: 20)), fileExtension: "rgba")
        #expect(try Data(contentsOf: URL(fileURLWithPath: small)) == Data(repeating: 6, count: 20), "far from every size: a new file")
        let kept = try FileManager.default.contentsOfDirectory(atPath: "\(folder)/free").filter { $0 != "dir" }
        #expect(kept.count == cap / big, "kept at most its cap")
        for name in kept { unlink("\(folder)/free/\(name)") }
        unlink(small)

        // The end removes both folders and the files in them (a directory is never entered).
        #expect(rename(fourth, "\(folder)/held/kept") == 0)
        #expect(rmdir("\(folder)/free/dir") == 0)
        await shared.finish(readerGone: true)
        #expect(!FileManager.default.fileExists(atPath: folder))
        #expect(FileManager.default.fileExists(atPath: victim))
    }

    @Test func aCancelledWaiterWritesNothing() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 1, maxBytes: 1 << 20))
        _ = try await shared.write(Payload([1, 2, 3]), fileExtension: "bin")
        let waiting = Task { try await shared.write(Payload([4, 5, 6]), fileExtension: "bin") }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: DeliveryFailure.self) { _ = try await waiting.value }
        #expect(shared.pending.files == 1)
        await shared.finish(readerGone: true)
    }

    /// A file system with no room (a container's 64 MB `/dev/shm`, a client keeping every image):
    /// the free files' memory is given up and the write tried once more afresh; with still no
    /// room, `write` says so (nil: the payload goes inline) and nothing of it is left or counted.
    /// Any other write error sends the payload inline too: no token fails for want of shared memory.
    @Test func noRoomGivesUpTheFreeFilesThenSaysSo() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // How many writes fail with ENOSPC from now on (-1: all), and EIO instead when asked.
        let failing = Mutex<(count: Int, code: Int32)>((0, ENOSPC))
        let shared = SharedOutput(root: root) { fd, bytes in
            let code = failing.withLock { f -> Int32? in
                guard f.count != 0 else { return nil }
                if f.count > 0 { f.count -= 1 }
                return f.code
            }
            if let code {
                errno = code
                return false
            }
            return FileDescriptorOutput.writeAll(fd, bytes)
        }
        let first = try await shared.write(Payload(Array(repeating: 1, count: 300)), fileExtension: "rgba")
        let folder = Self.folder(of: first)
        // The client gives it back (held/, then free/), and two more files are free.
        try FileManager.default.moveItem(atPath: first, toPath: folder + "/free/1.rgba")
        for name in ["a", "b"] { try Data(count: 1000).write(to: URL(fileURLWithPath: folder + "/free/" + name)) }
        // One write fails: the free files go, the second try (a fresh file) is written.
        failing.withLock { $0 = (1, ENOSPC) }
        let reservation = try #require(shared.tryReserve(300, fileExtension: "rgba").reservation)
        let written = try #require(shared.write(Payload(Array(repeating: 2, count: 300)), into: reservation))
        #expect(try Data(contentsOf: URL(fileURLWithPath: written)) == Data(repeating: 2, count: 300))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/free").isEmpty)
        unlink(written)
        // No room at all: nil, no file, nothing counted.
        failing.withLock { $0 = (-1, ENOSPC) }
        let before = shared.pending
        let full = try #require(shared.tryReserve(300, fileExtension: "rgba").reservation)
        #expect(shared.write(Payload(Array(repeating: 3, count: 300)), into: full) == nil)
        #expect(!FileManager.default.fileExists(atPath: full.path))
        #expect(shared.pending == before)
        // Room again: written.
        failing.withLock { $0 = (0, ENOSPC) }
        let again = try #require(shared.tryReserve(300, fileExtension: "rgba").reservation)
        #expect(shared.write(Payload(Array(repeating: 4, count: 300)), into: again) != nil)
        // Another error: inline as well, nothing left or counted.
        failing.withLock { $0 = (-1, EIO) }
        let counted = shared.pending
        let broken = try #require(shared.tryReserve(300, fileExtension: "rgba").reservation)
        #expect(shared.write(Payload(Array(repeating: 5, count: 300)), into: broken) == nil)
        #expect(!FileManager.default.fileExists(atPath: broken.path))
        #expect(shared.pending == counted)
        await shared.finish(readerGone: true)
    }

    /// `free/` keeps at most 64 MiB, or an eighth of the file system when that is less: a
    /// container's 64 MB `/dev/shm` keeps 8 MiB idle, not all of it.
    @Test func theFreeFilesCapFollowsTheFileSystemsSize() async throws {
        #expect(SharedOutput.freeByteCap(fileSystemBytes: 64 << 20) == 8 << 20)
        #expect(SharedOutput.freeByteCap(fileSystemBytes: 24 << 30) == SharedOutput.maxFreeBytes)
        #expect(SharedOutput.freeByteCap(fileSystemBytes: Int.max) == SharedOutput.maxFreeBytes)
    }

    /// Files not yet taken hold at most a quarter of a small file system (a client reading slowly
    /// on a container's 64 MB `/dev/shm` filled it: 67.1 of 67.1 MB, and 28 of 300 images went
    /// inline); one larger file is still written when none waits.
    @Test func filesWaitingForTheClientHoldAtMostAQuarterOfTheFileSystem() async throws {
        #expect(SharedOutput.pendingByteCap(maxBytes: 256 << 20, fileSystemBytes: 64 << 20) == 16 << 20)
        #expect(SharedOutput.pendingByteCap(maxBytes: 256 << 20, fileSystemBytes: 16 << 30) == 256 << 20)
        #expect(SharedOutput.pendingByteCap(maxBytes: 256 << 20, fileSystemBytes: Int.max) == 256 << 20)
        #expect(SharedOutput.reserveBytes(fileSystemBytes: 64 << 20) == 16 << 20)
        #expect(SharedOutput.reserveBytes(fileSystemBytes: 252 << 30) == 1 << 30, "a large disk is not held to a quarter")
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root, space: { _ in .init(size: 4 << 20, available: 4 << 20) })
        let big = try #require(shared.tryReserve(3 << 20, fileExtension: "rgba").reservation)  // alone: over the cap, written
        #expect(shared.write(Payload(Array(repeating: 1, count: 1000)), into: big) != nil)
        #expect(shared.tryReserve(100, fileExtension: "rgba").isFull)  // 1 MiB is the cap
        unlink(big.path)
        let first = try #require(shared.tryReserve(600 << 10, fileExtension: "rgba").reservation)
        _ = shared.write(Payload(Array(repeating: 2, count: 1000)), into: first)
        #expect(shared.tryReserve(300 << 10, fileExtension: "rgba").reservation != nil)  // 900 KiB
        #expect(shared.tryReserve(200 << 10, fileExtension: "rgba").isFull)  // 1.1 MiB: waits
        await shared.finish(readerGone: true)
    }

    /// A write that would leave less than a quarter of the file system free is not made: the free
    /// files are given up, and if that is not room enough the payload goes inline (nil), nothing
    /// left or counted; with room again, files are written again.
    @Test func aWriteLeavesAQuarterOfTheFileSystemFree() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A 64 MiB file system; what is available, as the test says (less when free/ holds files).
        let available = Mutex(40 << 20)
        let shared = SharedOutput(root: root, space: { _ in .init(size: 64 << 20, available: available.withLock { $0 }) })
        // Given back (far from 600 bytes in size: not recycled for the writes below).
        let first = try await shared.write(Payload(Array(repeating: 1, count: 5000)), fileExtension: "rgba")
        let folder = Self.folder(of: first)
        try FileManager.default.moveItem(atPath: first, toPath: folder + "/free/1.rgba")
        // 16 MiB + 300 bytes available: 16 MiB must stay free, so no.
        available.withLock { $0 = (16 << 20) + 300 }
        let short = try #require(shared.tryReserve(600, fileExtension: "rgba").reservation)
        let before = shared.pending.files
        #expect(shared.write(Payload(Array(repeating: 2, count: 600)), into: short) == nil)
        #expect(!FileManager.default.fileExists(atPath: short.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/free").isEmpty, "the free files are given up")
        #expect(shared.pending.files == before - 1)
        // Exactly enough: written.
        available.withLock { $0 = (16 << 20) + 600 }
        let fits = try #require(shared.tryReserve(600, fileExtension: "rgba").reservation)
        let path = try #require(shared.write(Payload(Array(repeating: 3, count: 600)), into: fits))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 3, count: 600))
        await shared.finish(readerGone: true)
    }

    /// A root where no folder can be made (read-only, full of inodes, not this user's): every
    /// payload goes inline (`unavailable`), nothing fails; said once.
    @Test func aRootWithoutRoomForTheFolderSendsEverythingInline() async throws {
        let root = try root()
        defer {
            chmod(root, 0o700)
            try? FileManager.default.removeItem(atPath: root)
        }
        chmod(root, 0o500)
        // (root may write anyway: then a file where the folder should be stands for the failure.)
        let blocked = access(root, W_OK) == 0 ? root + "/not-a-folder" : root
        if blocked != root { _ = FileManager.default.createFile(atPath: blocked, contents: Data()) }
        let shared = SharedOutput(root: blocked)
        guard case .unavailable = shared.tryReserve(100_000, fileExtension: "rgba") else {
            Issue.record("expected no shared memory")
            return
        }
        #expect(try await shared.reserve(100_000, fileExtension: "rgba") == nil)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).allSatisfy { !$0.hasPrefix(SharedOutput.prefix) }, "no folder made")
        await shared.finish(readerGone: true)
    }

    /// A delivery waiting for room sleeps (no polling) and is woken by the client taking a file;
    /// once the worker stops, a waiting delivery (and any later one) goes inline at once.
    @Test func waitersWakeWhenAFileIsTakenAndGoInlineOnceStopping() async throws {
        let root = try root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shared = SharedOutput(root: root)
        shared.setLimits(.init(maxImages: 1, maxBytes: 1 << 20))
        let a = try await shared.write(Payload(Array(repeating: 1, count: 100)), fileExtension: "rgba")
        let started = ContinuousClock.now
        let waiting = Task { try await shared.reserve(100, fileExtension: "rgba") }
        try await Task.sleep(for: .milliseconds(50))
        let folder = Self.folder(of: a)
        try FileManager.default.moveItem(atPath: a, toPath: folder + "/held/" + (a as NSString).lastPathComponent)
        let woken = try await waiting.value
        #expect(woken != nil)
        // (Woken, not timed: a busy test process may take a while to run the task.)
        #expect(ContinuousClock.now - started < .seconds(30))
        // The reservation is not written: it stays counted. The next one waits until the stop.
        let next = Task { try await shared.reserve(100, fileExtension: "rgba") }
        try await Task.sleep(for: .milliseconds(50))
        shared.stopWaiting()
        #expect(try await next.value == nil, "stopping: inline")
        #expect(shared.tryReserve(100, fileExtension: "rgba").reservation == nil)
        await shared.finish(readerGone: true)
    }
}

extension SharedOutput.Room {
    var reservation: SharedOutput.Reservation? {
        if case .reserved(let reservation) = self { return reservation }
        return nil
    }

    var isFull: Bool {
        if case .full = self { return true }
        return false
    }
}
