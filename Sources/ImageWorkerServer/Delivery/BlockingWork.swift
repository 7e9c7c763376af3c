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
}
