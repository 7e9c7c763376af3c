import Foundation

/// A delivery that finds shared memory full waits for the client to take files (inotify wakes
/// it), until the worker stops waiting.
extension SharedOutput {
    /// The worker is stopping: a payload waiting for room, or asking for it from now on, goes
    /// inline (a reader that never takes its files, `… | image-worker > events.jsonl`, would
    /// otherwise hold the worker forever).
    func stopWaiting() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.stopping = true
            return Self.changed(&s)
        }
        waiters.forEach { $0.resume() }
    }

    /// Room may have come: the waiters to resume.
    static func changed(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        s.generation &+= 1
        defer { s.waiters = [] }
        return s.waiters
    }

    /// Returns once room may have come since `generation` (a file left the folder, one was
    /// discarded, the worker is stopping, the task was cancelled). Without inotify: after a while.
    func waitForRoom(since generation: UInt64) async {
        let watched = state.withLock { $0.watch != nil }
        guard watched else {
            try? await Task.sleep(for: .milliseconds(20))
            return
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    // (Cancelled before it could be woken: it looks again, and leaves.)
                    guard s.generation == generation, !s.stopping, !s.closed, !Task.isCancelled else { return true }
                    s.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            // (Every waiter looks again; the cancelled one then leaves.)
            self.wakeWaiters()
        }
    }

    /// Resumes every `reserve` waiting for room, to look again.
    func wakeWaiters() {
        state.withLock { Self.changed(&$0) }.forEach { $0.resume() }
    }
}
