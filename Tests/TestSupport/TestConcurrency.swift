import Foundation

/// Every `every` steps of a long, CPU-bound test loop, lets the other tests' tasks run.
///
/// Swift Testing runs tests in parallel on the cooperative pool, which has one thread per core:
/// on a 2-core machine two model checks that never suspend take both threads for seconds, and
/// the tests waiting on loopback servers and worker processes miss their deadlines (seen: every
/// in-process server test of a run failing at once after 20 s). Suspending now and then keeps
/// the pool shared; it changes nothing the loop computes.
public func yieldThePool(_ step: Int, every: Int = 50) async {
    if step % every == every - 1 { await Task.yield() }
}

extension SplitMix {
    /// `count` seeded random bytes, eight to a draw: a test's large body made in milliseconds,
    /// not in the seconds a byte-by-byte `map` takes in a debug build (on the cooperative pool).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < count {
                var word = next()
                let n = Swift.min(8, count - offset)
                withUnsafeBytes(of: &word) { raw.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: n) }
                offset += n
            }
        }
        return bytes
    }
}

/// Runs CPU-bound set-up work (making a large test image, say) on a thread of its own, so that it
/// does not hold one of the cooperative pool's threads for seconds in a debug build.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// Lets through as many `pass` calls as `open` allowed, in arrival order.
public actor PassGate {
    private var allowed = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init() {}

    public func pass() async {
        if allowed > 0 {
            allowed -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    public func open(_ count: Int) {
        allowed += count
        while allowed > 0, !waiters.isEmpty {
            allowed -= 1
            waiters.removeFirst().resume()
        }
    }
}
