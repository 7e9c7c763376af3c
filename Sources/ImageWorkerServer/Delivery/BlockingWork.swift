import Dispatch

/// Runs blocking work (file writes now, decoding later) on Dispatch's global pool, so neither
/// Swift's cooperative threads nor NIO's event loops ever wait on it.
enum BlockingWork {
    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                do throws(E) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
