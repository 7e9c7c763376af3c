import Foundation

/// At most `limit` tokens decode and render at a time (one per core by default): a token takes a
/// slot before its decode and gives it back once its image is delivered (or waits for output
/// capacity), so the bitmaps alive at once are bounded by the slots, not by how many fetches
/// finished together. Waiters are served first come, first served.
final class DecodeSlots: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: LockedState<State>

    init(limit: Int = ProcessInfo.processInfo.activeProcessorCount) {
        state = LockedState(State(free: max(1, limit)))
    }

    func acquire() async {
        let acquired = state.withLock { s -> Bool in
            guard s.free > 0 else { return false }
            s.free -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                // A slot freed between the two locks.
                if s.free > 0 {
                    s.free -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Gives a slot back: to the first waiter, if any.
    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.head < s.waiters.count {
                let waiter = s.waiters[s.head]
                s.head += 1
                if s.head == s.waiters.count {
                    s.waiters.removeAll(keepingCapacity: true)
                    s.head = 0
                }
                return waiter
            }
            s.free += 1
            return nil
        }
        next?.resume()
    }
}
