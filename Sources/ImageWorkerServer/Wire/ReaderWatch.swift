import Foundation

/// Tells when the reader of the wire is gone while the worker has nothing to write: a pipe's
/// read end closed (the parent exited, or closed its side to stop the worker) reports POLLERR
/// on the write end. Writing finds it too (EPIPE), but a worker whose downloads are silent
/// (a host that never answers) writes nothing for their whole timeouts: it would go on for
/// them. Watches pipes and sockets only (a file never loses its reader), on a thread of its
/// own blocked in `poll`, woken by `cancel`.
final class ReaderWatch: Sendable {
    private let wake: (read: Int32, write: Int32)?
    private let cancelled = LockedState(false)

    init(fd: Int32, onGone: @escaping @Sendable () -> Void) {
        var info = stat()
        let type = fstat(fd, &info) == 0 ? info.st_mode & S_IFMT : 0
        var fds: [Int32] = [-1, -1]
        guard type == S_IFIFO || type == S_IFSOCK, pipe(&fds) == 0 else {
            wake = nil
            return
        }
        for end in fds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let wake = (read: fds[0], write: fds[1])
        self.wake = wake
        let thread = Thread {
            var watched = [pollfd(fd: fd, events: 0, revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            while true {
                let ready = poll(&watched, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 || watched[1].revents != 0 { break }
                if watched[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    onGone()
                    break
                }
            }
            close(wake.read)
        }
        thread.name = "image-worker: reader watch"
        thread.start()
    }

    /// Stops watching (the thread ends and closes its end of the wake pipe).
    func cancel() {
        guard let wake, cancelled.withLock({ c in defer { c = true }; return !c }) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        close(wake.write)
    }
}
