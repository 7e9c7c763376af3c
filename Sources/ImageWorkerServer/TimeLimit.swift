/// Runs `operation`, giving up waiting for it after `limit`. The operation need not respond to
/// cancellation (a wait on a continuation does not): it is cancelled at the limit and left to
/// finish on its own, while the caller goes on. (A task group would wait for it regardless.)
func withTimeLimit(_ limit: Duration, _ operation: @escaping @Sendable () async -> Void) async {
    enum Gate {
        case pending
        case waiting(CheckedContinuation<Void, Never>)
        case done
    }
    let gate = LockedState(Gate.pending)
    let resumeOnce: @Sendable () -> Void = {
        let waiting = gate.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .done }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiting?.resume()
    }
    let work = Task {
        await operation()
        resumeOnce()
    }
    let timer = Task {
        try? await Task.sleep(for: limit)
        resumeOnce()
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let finished = gate.withLock { state -> Bool in
            if case .done = state { return true }
            state = .waiting(continuation)
            return false
        }
        if finished { continuation.resume() }
    }
    work.cancel()
    timer.cancel()
}
