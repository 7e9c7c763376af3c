/// How many downloads are live (accepted, their terminal event not yet sent) against
/// `maxLiveDownloads`: past it the worker stops reading its input until one ends, so a caller
/// that sends faster than the worker fetches is held back by the pipe instead of the worker
/// growing without bound. While the queue is suspended nothing would end: a download past the
/// limit is refused then (a reader that stopped could never read the `configure` that resumes).
final class DownloadBacklog: Sendable {
    private struct State {
        var live = 0
        var limit: Int
        var suspended = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: LockedState<State>

    static let defaultLimit = 10_000

    init(limit: Int = DownloadBacklog.defaultLimit) {
        state = LockedState(State(limit: limit))
    }

    /// A download was accepted.
    func accepted() {
        state.withLock { $0.live += 1 }
    }

    /// A download's terminal event was sent.
    func ended() {
        wake { $0.live -= 1 }
    }

    func setLimit(_ limit: Int, suspended: Bool) {
        wake { s in (s.limit, s.suspended) = (limit, suspended) }
    }

    /// Whether a new download is refused: the limit is reached and the queue suspended.
    var refusesWhileSuspended: Bool {
        state.withLock { $0.suspended && $0.live >= $0.limit }
    }

    var counts: (live: Int, limit: Int) { state.withLock { ($0.live, $0.limit) } }

    /// Returns once the input may be read on: fewer live downloads than the limit, or a
    /// suspended queue (then `download` refuses instead). One waiter: the input loop.
    func waitForRoom() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.live < s.limit || s.suspended { return true }
                s.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func wake(_ change: (inout State) -> Void) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            change(&s)
            guard s.live < s.limit || s.suspended, let waiter = s.waiter else { return nil }
            s.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
