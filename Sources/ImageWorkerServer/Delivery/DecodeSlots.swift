import Foundation
import ImageDownloader

/// The delivery stage's gate: a decoding token takes a slot before its decode and gives it back
/// once its image is delivered (or once it waits for output capacity), so the bitmaps alive at
/// once are bounded by the stage's concurrency and memory budget (`DecodeAdmission` decides),
/// not by how many fetches finished together. Fetches give their network slots back as soon as
/// their bodies are in; this stage is where their tokens wait.
final class DecodeSlots: Sendable {
    /// A slot held: give it back with `release` (once).
    struct Slot: Sendable {
        fileprivate let ticket: DecodeAdmission.Ticket
    }

    private struct State {
        var admission: DecodeAdmission
        var continuations: [DecodeAdmission.Ticket: CheckedContinuation<Bool, Never>] = [:]
        var nextTicket: DecodeAdmission.Ticket = 0
        /// Tickets whose task was cancelled before they were queued.
        var cancelledEarly: Set<DecodeAdmission.Ticket> = []
    }

    private let state: LockedState<State>

    static let defaultConcurrency = ProcessInfo.processInfo.activeProcessorCount
    static let defaultMemoryBytes = 256 << 20

    init(limit: Int = DecodeSlots.defaultConcurrency, memoryBytes: Int = DecodeSlots.defaultMemoryBytes) {
        state = LockedState(State(admission: DecodeAdmission(limit: limit, budget: memoryBytes)))
    }

    /// Waits for a slot for a decode of about `cost` bytes of bitmap; nil when the task was
    /// cancelled first (its token ended: nothing is to be decoded).
    func acquire(token: DownloadToken, priority: DownloadPriority, cost: Int) async -> Slot? {
        let ticket = state.withLock { s -> DecodeAdmission.Ticket in
            s.nextTicket += 1
            return s.nextTicket
        }
        let admitted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s -> Bool? in
                    if s.cancelledEarly.remove(ticket) != nil { return false }
                    if s.admission.request(.init(ticket: ticket, token: token, priority: priority, cost: max(0, cost))) { return true }
                    s.continuations[ticket] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            var waiter: CheckedContinuation<Bool, Never>?
            wake { s in
                guard let queued = s.continuations.removeValue(forKey: ticket) else {
                    // Not queued yet (or already running: then nothing to do).
                    if s.admission.running[ticket] == nil { s.cancelledEarly.insert(ticket) }
                    return []
                }
                waiter = queued
                return s.admission.cancel(ticket)
            }
            waiter?.resume(returning: false)
        }
        return admitted ? Slot(ticket: ticket) : nil
    }

    /// Gives a slot back: to the waiters it lets in, if any.
    func release(_ slot: Slot) {
        wake { $0.admission.release(slot.ticket) }
    }

    /// Memory of the budget for a progressive decode, without waiting: nil when it is taken (the
    /// image is then decoded whole, through `acquire`). Give it back with `release`.
    func reserve(cost: Int) -> Slot? {
        state.withLock { s -> Slot? in
            s.nextTicket += 1
            return s.admission.reserve(s.nextTicket, cost: max(0, cost)) ? Slot(ticket: s.nextTicket) : nil
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

    /// Applies `change` under the lock, then wakes (outside it) the waiters it admitted.
    private func wake(_ change: (inout State) -> [DecodeAdmission.Ticket]) {
        let woken = state.withLock { s in change(&s).compactMap { s.continuations.removeValue(forKey: $0) } }
        for continuation in woken { continuation.resume(returning: true) }
    }
}
