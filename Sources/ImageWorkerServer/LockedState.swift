import Synchronization

/// A `Mutex` that closures can share (a `Mutex` itself cannot be copied into one).
final class LockedState<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }
}
