import Foundation
import ImageDownloader

/// The delivery stage's gate: a decoding token takes a slot before its decode and gives it back
/// once its image is delivered (or once it waits for output capacity or shared memory, keeping
/// its result's bytes counted, `hold`, until it is handed over; or at once when it joins a decode
/// another token of its fetch started, `OutputDelivery.decodeAdmitted`), so the bitmaps alive at
/// once are bounded by the stage's concurrency and memory budget (`DecodeAdmission`
/// decides), not by how many fetches finished together. Fetches give their network slots back as
/// soon as their bodies are in; this stage is where their tokens wait.
final class DecodeSlots: Sendable {
    /// A slot held: give it back with `release` (once).
    struct Slot: Sendable {
        fileprivate let ticket: DecodeAdmission.Ticket
    }

    /// A decode waiting for its slot: what runs when it is let in, or when it gives up.
    private struct Waiter: Sendable {
        /// True: `admit` runs on the blocking pool (handed on to the lane of the decode that
        /// gave the slot back, if any); false: wherever the slot is given back.
        var onPool: Bool
        var admit: @Sendable (Slot, inout BlockingWork.Lane) -> Void
        var cancel: @Sendable () -> Void
    }

    private struct State {
        var admission: DecodeAdmission
        var waiters: [DecodeAdmission.Ticket: Waiter] = [:]
        var nextTicket: DecodeAdmission.Ticket = 0
        /// Tickets whose task was cancelled before they were queued.
        var cancelledEarly: Set<DecodeAdmission.Ticket> = []
    }

    private let state: LockedState<State>

    static let defaultConcurrency = AvailableCPUs.count()
    static let defaultMemoryBytes = 256 << 20

    init(limit: Int = DecodeSlots.defaultConcurrency, memoryBytes: Int = DecodeSlots.defaultMemoryBytes) {
        state = LockedState(State(admission: DecodeAdmission(limit: limit, budget: memoryBytes)))
    }

    /// Waits for a slot for a decode of about `cost` bytes of bitmap; nil when the task was
    /// cancelled first (its token ended: nothing is to be decoded).
    func acquire(token: DownloadToken, priority: DownloadPriority, cost: Int) async -> Slot? {
        await wait(token: token, priority: priority, cost: cost, onPool: false) { slot, _ in slot }
    }

    /// Waits for a slot, and runs `admitted` with it on the blocking pool as it is let in: on the
    /// thread of the decode that gave the slot back, next (`BlockingWork.Lane`), when one did, so
    /// that the decode `admitted` starts runs without waiting for this task or for another
    /// thread to wake. What `admitted` returns; nil when the task was cancelled first.
    func acquire<T: Sendable>(
        token: DownloadToken, priority: DownloadPriority, cost: Int,
        admitted: @escaping @Sendable (Slot, inout BlockingWork.Lane) -> T
    ) async -> T? {
        await wait(token: token, priority: priority, cost: cost, onPool: true, admitted: admitted)
    }

    private func wait<T: Sendable>(
        token: DownloadToken, priority: DownloadPriority, cost: Int, onPool: Bool,
        admitted: @escaping @Sendable (Slot, inout BlockingWork.Lane) -> T
    ) async -> T? {
        let ticket = state.withLock { s -> DecodeAdmission.Ticket in
            s.nextTicket += 1
            return s.nextTicket
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
                let waiter = Waiter(
                    onPool: onPool,
                    admit: { slot, lane in continuation.resume(returning: admitted(slot, &lane)) },
                    cancel: { continuation.resume(returning: nil) })
                let now = state.withLock { s -> Bool? in
                    if s.cancelledEarly.remove(ticket) != nil { return false }
                    if s.admission.request(.init(ticket: ticket, token: token, priority: priority, cost: max(0, cost))) { return true }
                    s.waiters[ticket] = waiter
                    return nil
                }
                switch now {
                case true?: Self.admit([(Slot(ticket: ticket), waiter)]) { BlockingWork.start($0) }
                case false?: waiter.cancel()
                case nil: break
                }
            }
        } onCancel: {
            var cancelled: Waiter?
            wake { s in
                guard let queued = s.waiters.removeValue(forKey: ticket) else {
                    // Not queued yet (or already running: then nothing to do).
                    if s.admission.running[ticket] == nil { s.cancelledEarly.insert(ticket) }
                    return []
                }
                cancelled = queued
                return s.admission.cancel(ticket)
            }
            cancelled?.cancel()
        }
    }

    /// Gives a slot back: to the waiters it lets in, if any.
    func release(_ slot: Slot) {
        wake { $0.admission.release(slot.ticket) }
    }

    /// Gives a slot back from a decoding thread: the first decode it lets in runs next on `lane`.
    func release(_ slot: Slot, lane: inout BlockingWork.Lane) {
        wake({ $0.admission.release(slot.ticket) }, handOn: { lane.handOn($0) })
    }

    /// Memory of the budget for a progressive decode, without waiting: nil when it is taken (the
    /// image is then decoded whole, through `acquire`). Give it back with `release`.
    func reserve(cost: Int) -> Slot? {
        state.withLock { s -> Slot? in
            s.nextTicket += 1
            return s.admission.reserve(s.nextTicket, cost: max(0, cost)) ? Slot(ticket: s.nextTicket) : nil
        }
    }

    /// Counts `bytes` of a decoded result that waits to be handed over against the budget, at once
    /// (they are in memory already); give them back with `release` once it is written or sent.
    func hold(bytes: Int) -> Slot {
        state.withLock { s -> Slot in
            s.nextTicket += 1
            s.admission.hold(s.nextTicket, cost: max(0, bytes))
            return Slot(ticket: s.nextTicket)
        }
    }

    /// A token's priority changed (`setPriority`): its waiting decodes move with it.
    func setPriority(_ token: DownloadToken, _ priority: DownloadPriority) {
        wake { $0.admission.setPriority(token, priority) }
    }

    /// `configure`'s `decodeConcurrency` and `decodeMemoryBytes`.
    func setLimits(concurrency: Int, memoryBytes: Int) {
        wake { $0.admission.setLimits(limit: concurrency, budget: memoryBytes) }
    }

    /// Decodes running and waiting now (for `status`).
    var counts: (running: Int, waiting: Int, bytesInFlight: Int, progressive: Int) {
        state.withLock { s in (s.admission.running.count, s.admission.waiting.count, s.admission.bytesInFlight, s.admission.held.count) }
    }

    /// Applies `change` under the lock, then lets in (outside it) the waiters it admitted: those
    /// that run on the pool handed on by `handOn` (by default, started there).
    private func wake(
        _ change: (inout State) -> [DecodeAdmission.Ticket],
        handOn: (@escaping @Sendable (inout BlockingWork.Lane) -> Void) -> Void = { BlockingWork.start($0) }
    ) {
        let woken = state.withLock { s in
            change(&s).compactMap { ticket in s.waiters.removeValue(forKey: ticket).map { (Slot(ticket: ticket), $0) } }
        }
        Self.admit(woken, handOn: handOn)
    }

    private static func admit(
        _ admitted: [(Slot, Waiter)], handOn: (@escaping @Sendable (inout BlockingWork.Lane) -> Void) -> Void
    ) {
        for (slot, waiter) in admitted {
            if !waiter.onPool {
                var here = BlockingWork.Lane()
                waiter.admit(slot, &here)
                here.startPending()
            } else {
                handOn { waiter.admit(slot, &$0) }
            }
        }
    }
}
