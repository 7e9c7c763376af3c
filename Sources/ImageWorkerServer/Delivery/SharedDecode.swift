import ImageDecoding

/// One decode that every token of a fetch asking the same awaits. Whoever makes it runs it on
/// the blocking pool (`run`: on a lane, so that a decode it admits can follow on the same
/// thread), and its thread resumes the tokens waiting for it: no task of its own to schedule
/// before the decode and after it. A token may also do its next step on that thread
/// (`whenDone`: render, write its file, give its decode slot back), before any waiter is
/// resumed, so that the next decode starts there at once.
final class SharedDecode: Sendable {
    typealias Outcome = Result<DecodedImage, DecodeError>
    /// Work for the decoding thread once the decode ended, with its outcome.
    typealias Hook = @Sendable (Outcome, inout BlockingWork.Lane) -> Void

    private struct State {
        /// Until it runs.
        var decode: (@Sendable () throws(DecodeError) -> DecodedImage)?
        var outcome: Outcome?
        var hooks: [Hook] = []
    }

    private let state: LockedState<State>
    /// The outcome for the waiters, once the hooks have run.
    private let result = Promise<Outcome>()

    init(_ decode: @escaping @Sendable () throws(DecodeError) -> DecodedImage) {
        state = LockedState(State(decode: decode))
    }

    /// Decodes here (on the blocking pool; once, later calls do nothing), then runs the hooks
    /// with `lane` and resumes the waiters.
    func run(_ lane: inout BlockingWork.Lane) {
        guard let decode = state.withLock({ s in defer { s.decode = nil }; return s.decode }) else { return }
        let outcome: Outcome
        do throws(DecodeError) { outcome = .success(try decode()) } catch { outcome = .failure(error) }
        let hooks = state.withLock { s in
            s.outcome = outcome
            defer { s.hooks = [] }
            return s.hooks
        }
        for hook in hooks { hook(outcome, &lane) }
        result.fulfil(outcome)
    }

    /// `hook` runs once, on the decoding thread when the decode ends; handed on to `lane` when
    /// it has ended already (so never on a caller's thread off the pool).
    func whenDone(_ hook: @escaping Hook, lane: inout BlockingWork.Lane) {
        let ended = state.withLock { s -> Outcome? in
            if let outcome = s.outcome { return outcome }
            s.hooks.append(hook)
            return nil
        }
        if let ended { lane.handOn { hook(ended, &$0) } }
    }

    /// The decode's result, once it has one.
    func value() async -> Outcome {
        await result.value()
    }
}
