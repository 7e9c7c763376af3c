import Foundation
import Synchronization

/// Tells when a file leaves a folder (unlinked, or moved out: a client taking a shared-memory
/// file), through inotify, so that a delivery waiting for room sleeps until then instead of
/// polling. A thread of its own sleeps in `poll` on the inotify descriptor and on a pipe that
/// `cancel` writes to. Nil where inotify cannot be had (the caller then looks again after a while).
final class FolderWatch: Sendable {
    /// The pipe's write end: a byte there ends the watch.
    private let stopFD: Int32
    private let cancelled = Atomic<Bool>(false)

    init?(path: String, onChange: @escaping @Sendable () -> Void) {
        let watchFD = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard watchFD >= 0 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(watchFD)
            return nil
        }
        let (wakeFD, stopFD) = (ends[0], ends[1])
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard inotify_add_watch(watchFD, path, UInt32(IN_DELETE | IN_MOVED_FROM)) >= 0 else {
            for fd in [watchFD, wakeFD, stopFD] { close(fd) }
            return nil
        }
        self.stopFD = stopFD
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var fds = [pollfd(fd: watchFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            while true {
                fds[0].revents = 0
                fds[1].revents = 0
                let ready = poll(&fds, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 || fds[1].revents != 0 { break }
                // Every event waiting is read (they say no more than "something left").
                while buffer.withUnsafeMutableBytes({ read(watchFD, $0.baseAddress, $0.count) }) > 0 {}
                onChange()
            }
            close(watchFD)
            close(wakeFD)
        }
        thread.name = "image-worker shared-memory watch"
        thread.start()
    }

    /// Ends the watch (once; its thread closes its descriptors as it leaves).
    func cancel() {
        guard !cancelled.exchange(true, ordering: .relaxed) else { return }
        var one: UInt8 = 1
        _ = write(stopFD, &one, 1)
        close(stopFD)
    }
}
