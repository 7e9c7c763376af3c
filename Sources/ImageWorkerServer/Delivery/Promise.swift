/// A value made once, on any thread, and awaited by tasks: a token's delivery step that runs on
/// a decoding thread hands its result to the token's task through one.
final class Promise<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = LockedState(State())

    init() {}

    /// Sets the value (the first time only) and resumes whoever awaits it.
    func fulfil(_ value: Value) {
        let waiters = state.withLock { s -> [CheckedContinuation<Value, Never>] in
            guard s.value == nil else { return [] }
            s.value = value
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    func value() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let now = state.withLock { s -> Value? in
                if let value = s.value { return value }
                s.waiters.append(continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}
