import Dispatch

/// Runs blocking work (decoding, file writes) on Dispatch's global pool, so neither Swift's
/// cooperative threads nor NIO's event loops ever wait on it.
enum BlockingWork {
    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            start {
                do throws(E) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Starts `work` on the pool and returns at once (for work that hands its result on itself).
    static func start(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global(qos: .userInitiated).async(execute: work)
    }

    /// Starts `work` on the pool with a lane: what it hands on runs after it, on the same thread.
    static func start(_ work: @escaping @Sendable (inout Lane) -> Void) {
        start {
            var lane = Lane()
            work(&lane)
            lane.drain()
        }
    }

    /// Work handed on by work running on one thread, to run there next, in turn (never nested):
    /// a decode that ends and gives its slot back runs the decode that slot admits, on the
    /// thread that is already awake on its core, rather than waking another one (with one slot
    /// per core, each such wake-up could leave a core idle while the woken thread waited for the
    /// busy one). One piece of work at a time is handed on; more go to the pool, so that they
    /// run side by side.
    struct Lane: Sendable {
        private var next: (@Sendable (inout Lane) -> Void)?

        var isEmpty: Bool { next == nil }

        /// Runs `work` on this lane's thread after what runs now, or on the pool when this lane
        /// has work waiting already.
        mutating func handOn(_ work: @escaping @Sendable (inout Lane) -> Void) {
            if next == nil {
                next = work
            } else {
                BlockingWork.start(work)
            }
        }

        /// Runs what was handed on, then what that hands on, in turn.
        mutating func drain() {
            while let work = next {
                next = nil
                work(&self)
            }
        }

        /// For a lane made off the pool (in an async task): starts what was handed on to it on the
        /// pool.
        mutating func startPending() {
            guard let work = next else { return }
            next = nil
            BlockingWork.start(work)
        }
    }
}
