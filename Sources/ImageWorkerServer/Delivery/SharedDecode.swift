import ImageDecoding

/// One decode that every token of a fetch asking the same awaits. It starts on the blocking pool
/// at once, from the thread that asks for it, and its thread resumes the tokens waiting for it:
/// no task of its own to schedule before the decode and after it. A waiter may also give its
/// decode slot back from that thread, before it is resumed, so that the next decode starts
/// without waiting for this token's task to run (with one slot per core, each hop between threads
/// there left a core idle).
final class SharedDecode: Sendable {
    typealias Outcome = Result<DecodedImage, DecodeError>

    private struct State {
        var outcome: Outcome?
        var waiters: [(continuation: CheckedContinuation<Outcome, Never>, whenDone: (@Sendable () -> Void)?)] = []
    }

    private let state = LockedState(State())

    init(_ decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage) {
        BlockingWork.start { [self] in
            let outcome: Outcome
            do throws(DecodeError) { outcome = .success(try decode()) } catch { outcome = .failure(error) }
            let waiters = state.withLock { s in
                s.outcome = outcome
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters {
                waiter.whenDone?()
                waiter.continuation.resume(returning: outcome)
            }
        }
    }

    /// The decode's result, once it has one; `whenDone` runs first, on the decoding thread (or
    /// here when the decode had ended).
    func value(whenDone: (@Sendable () -> Void)? = nil) async -> Outcome {
        await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let done = state.withLock { s -> Outcome? in
                if let outcome = s.outcome { return outcome }
                s.waiters.append((continuation, whenDone))
                return nil
            }
            if let done {
                whenDone?()
                continuation.resume(returning: done)
            }
        }
    }
}
