import NIOConcurrencyHelpers

/// A value behind a lock; copies share it (closures and threads each hold one).
///
/// Not `Synchronization.Mutex`: on Linux (Swift 6.3) that is a priority-inheritance futex, which
/// hands a contended lock straight to the thread waiting for it, so the lock then belongs to a
/// thread that is not running yet, and every other thread that wants it sleeps until that one
/// gets a core: with two cores and the decoders busy, the cores stood idle. `NIOLockedValueBox`
/// (a plain `pthread_mutex_t`) lets whichever thread is running take it.
struct LockedState<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>

    init(_ value: Value) { box = NIOLockedValueBox(value) }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try box.withLockedValue { try body(&$0) }
    }
}
