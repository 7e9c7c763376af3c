import Dispatch
import Foundation
import ImageWorkerProtocol
import NIOConcurrencyHelpers

/// The one writer of the wire. Every message is encoded by the sender, queued, and written by a
/// dedicated thread, whole messages only (the ones waiting together in one `write`), so lines
/// never interleave and a slow reader never blocks the network or the decoders.
///
/// The queue is bounded in what matters: under pressure (more than `pressureBytes` waiting, i.e.
/// the reader has fallen behind by more than a pipe's buffer), a message sent with a `replaceKey`
/// (progress, partial images) replaces the unsent older message with the same key, so a token has
/// at most one of each waiting. Responses and terminal events are never dropped. Above
/// `highWaterBytes` the writer is `backedUp` until it has drained below half of that: the worker
/// then starts no new fetch (`onBackedUpChange`) and `waitForCapacity` holds back new inline
/// payloads, while stdin is still read, so `cancel`, `cancelAll` and `shutdown` act at once.
/// A payload let through counts as waiting from then on (`waitForCapacity(claiming:)`), until its
/// line is queued (`send(_:settling:)`) or it is given up (`settle`): results handed over at
/// the same moment cannot pass the limit together before any of their lines exists.
public final class WireWriter: Sendable {
    private struct Pending {
        var bytes: [UInt8]
        var replaceKey: String?
    }

    private struct State {
        var framing: Framing = .ndjson
        var slots: [Pending?] = []
        var head = 0
        var replaceIndex: [String: Int] = [:]
        var pendingBytes = 0
        var writing = false
        /// The writer thread found nothing to write and waits (or is about to) for `wake`.
        var sleeping = false
        var closed = false
        var backedUp = false
        /// Bytes of lines let through and not yet queued (claimed by `waitForCapacity`).
        var promisedBytes = 0
        var capacityWaiters: [(continuation: CheckedContinuation<Bool, Never>, claiming: Int)] = []
        var flushWaiters: [CheckedContinuation<Void, Never>] = []

        var isDrained: Bool { head == slots.count && !writing }

        /// Counts `bytes` as waiting: true when that backed the writer up.
        mutating func claim(_ bytes: Int, highWater: Int) -> Bool {
            promisedBytes += bytes
            guard !backedUp, pendingBytes + promisedBytes >= highWater else { return false }
            backedUp = true
            return true
        }

        /// Once what waits (queued and claimed) is below half the high-water mark: no longer
        /// backed up, and the capacity waiters let in, in order, each claiming its bytes, until
        /// one backs the writer up again. Whether `backedUp` changed, and the waiters to resume.
        mutating func catchUp(highWater: Int) -> (changed: Bool, resume: [CheckedContinuation<Bool, Never>]) {
            guard backedUp, pendingBytes + promisedBytes < highWater / 2 else { return (false, []) }
            backedUp = false
            var resume: [CheckedContinuation<Bool, Never>] = []
            while !backedUp, !capacityWaiters.isEmpty {
                let waiter = capacityWaiters.removeFirst()
                _ = claim(waiter.claiming, highWater: highWater)
                resume.append(waiter.continuation)
            }
            return (!backedUp, resume)
        }
    }

    private let state = NIOLockedValueBox(State())
    private let wake = DispatchSemaphore(value: 0)
    private let fd: Int32
    private let onClosed: @Sendable () -> Void
    private let onBackedUpChange: @Sendable () -> Void
    public let highWaterBytes: Int
    public let pressureBytes: Int

    /// - Parameters:
    ///   - fd: the private descriptor of the wire (a `dup` of the original stdout).
    ///   - onClosed: called once, from the writer thread, when the reader is gone (EPIPE).
    ///   - onBackedUpChange: called after `backedUp` may have changed (read it then: calls from
    ///     two threads may arrive in either order, the property is always current).
    public init(
        fd: Int32, highWaterBytes: Int = 8 << 20, pressureBytes: Int = 64 << 10,
        onClosed: @escaping @Sendable () -> Void, onBackedUpChange: @escaping @Sendable () -> Void = {}
    ) {
        self.fd = fd
        self.highWaterBytes = highWaterBytes
        self.pressureBytes = pressureBytes
        self.onClosed = onClosed
        self.onBackedUpChange = onBackedUpChange
        let thread = Thread { [self] in self.run() }
        thread.name = "image-worker wire writer"
        thread.start()
    }

    /// More than `highWaterBytes` were waiting, and the reader has not yet taken them down to
    /// half of that.
    public var backedUp: Bool { state.withLockedValue { $0.backedUp && !$0.closed } }

    /// Whether the reader is gone: a write failed with EPIPE, or (without a write since) the
    /// pipe's read end is closed (poll says POLLERR or POLLHUP).
    public var readerGone: Bool {
        if state.withLockedValue({ $0.closed }) { return true }
        var probe = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&probe, 1, 0) == 1 && probe.revents & Int16(POLLERR | POLLHUP) != 0
    }

    public var framing: Framing {
        get { state.withLockedValue { $0.framing } }
        set { state.withLockedValue { $0.framing = newValue } }
    }

    /// Queues one message. With a `replaceKey`, an unsent message with the same key is replaced
    /// in place by this newer one: under pressure, or always with `alwaysReplace` (partial
    /// images: at most one waits per token). `settling`: the bytes this message's payload claimed
    /// (`waitForCapacity(claiming:)`), counted as queued from now on.
    public func send(_ message: JSONValue, replaceKey: String? = nil, alwaysReplace: Bool = false, settling claimed: Int = 0) {
        let json = JSONWriter.encode(message)
        let (wakeWriter, becameBackedUp) = state.withLockedValue { s -> (Bool, Bool) in
            s.promisedBytes = max(0, s.promisedBytes - claimed)
            guard !s.closed else { return (false, false) }
            let bytes = s.framing.frame(json)
            if let replaceKey, alwaysReplace || s.pendingBytes > pressureBytes, let index = s.replaceIndex[replaceKey], index >= s.head,
                let old = s.slots[index]
            {
                s.pendingBytes += bytes.count - old.bytes.count
                s.slots[index] = Pending(bytes: bytes, replaceKey: replaceKey)
            } else {
                if let replaceKey { s.replaceIndex[replaceKey] = s.slots.count }
                s.slots.append(Pending(bytes: bytes, replaceKey: replaceKey))
                s.pendingBytes += bytes.count
            }
            let wakeWriter = s.sleeping
            s.sleeping = false
            guard !s.backedUp, s.pendingBytes + s.promisedBytes >= highWaterBytes else { return (wakeWriter, false) }
            s.backedUp = true
            return (wakeWriter, true)
        }
        if wakeWriter { wake.signal() }
        if becameBackedUp { onBackedUpChange() }
    }

    /// Returns when fewer than `highWaterBytes` wait to be written (at once, usually), having
    /// counted `claiming` bytes as waiting (the line of a payload about to be sent), until
    /// `send(_:settling:)` queues that line or `settle` gives the claim up. Waiters are let in in
    /// order. (A closed writer claims nothing.)
    public func waitForCapacity(claiming bytes: Int = 0) async {
        let backedUpNow = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now = state.withLockedValue { s -> Bool? in
                if s.closed { return false }
                guard s.backedUp else { return s.claim(bytes, highWater: highWaterBytes) }
                s.capacityWaiters.append((continuation, bytes))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
        if backedUpNow { onBackedUpChange() }
    }

    /// Gives up `bytes` claimed by `waitForCapacity(claiming:)` whose line will not come.
    public func settle(_ bytes: Int) {
        guard bytes > 0 else { return }
        let (changed, resume) = state.withLockedValue { s -> (Bool, [CheckedContinuation<Bool, Never>]) in
            s.promisedBytes = max(0, s.promisedBytes - bytes)
            return s.catchUp(highWater: highWaterBytes)
        }
        resume.forEach { $0.resume(returning: false) }
        if changed { onBackedUpChange() }
    }

    /// Returns when everything queued so far is written (or the reader is gone).
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { s -> Bool in
                if s.closed || s.isDrained { return true }
                s.flushWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// `flush`, giving up after `timeout`.
    public func flush(timeout: Duration) async {
        await withTimeLimit(timeout) { await self.flush() }
    }

    private func run() {
        while true {
            guard let bytes = takeNext() else {
                wake.wait()
                continue
            }
            if writeAll(bytes) {
                finishWrite()
            } else {
                closeAfterWriteFailure()
            }
        }
    }

    /// Messages waiting together are joined into one write of up to `batchBytes` (a larger
    /// message goes alone, uncopied): one system call and one wake-up of the reader for a burst
    /// of events rather than one each.
    private static let batchBytes = 64 << 10

    /// The next whole messages to write, or nil (the writer then sleeps until `send` wakes it).
    private func takeNext() -> [UInt8]? {
        state.withLockedValue { s -> [UInt8]? in
            var batch: [UInt8]? = nil
            while !s.closed, s.head < s.slots.count {
                guard let pending = s.slots[s.head] else {
                    s.head += 1
                    continue
                }
                if var joined = batch {
                    guard joined.count + pending.bytes.count <= Self.batchBytes else { break }
                    batch = nil  // (so that `joined` is uniquely referenced and grows in place)
                    joined.append(contentsOf: pending.bytes)
                    batch = joined
                } else {
                    batch = pending.bytes
                }
                s.slots[s.head] = nil
                s.head += 1
                if let key = pending.replaceKey, s.replaceIndex[key] == s.head - 1 { s.replaceIndex[key] = nil }
                s.pendingBytes -= pending.bytes.count
                if pending.bytes.count > Self.batchBytes { break }
            }
            s.writing = batch != nil
            s.sleeping = batch == nil
            return batch
        }
    }

    private func finishWrite() {
        let (capacity, flushed, caughtUp) = state.withLockedValue {
            s -> ([CheckedContinuation<Bool, Never>], [CheckedContinuation<Void, Never>], Bool) in
            s.writing = false
            if s.head == s.slots.count {
                s.slots.removeAll(keepingCapacity: s.slots.count < 4096)
                s.head = 0
                s.replaceIndex.removeAll(keepingCapacity: true)
            } else if s.head > 4096 && s.head * 2 > s.slots.count {
                s.slots.removeFirst(s.head)
                for (key, index) in s.replaceIndex { s.replaceIndex[key] = index - s.head }
                s.head = 0
            }
            let (caughtUp, capacity) = s.catchUp(highWater: highWaterBytes)
            var flushed: [CheckedContinuation<Void, Never>] = []
            if s.isDrained {
                flushed = s.flushWaiters
                s.flushWaiters = []
            }
            return (capacity, flushed, caughtUp)
        }
        capacity.forEach { $0.resume(returning: false) }
        flushed.forEach { $0.resume() }
        if caughtUp { onBackedUpChange() }
    }

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        FileDescriptorOutput.writeAll(fd, bytes)
    }

    private func closeAfterWriteFailure() {
        let (capacity, flushed) = state.withLockedValue { s -> ([CheckedContinuation<Bool, Never>], [CheckedContinuation<Void, Never>]) in
            s.closed = true
            s.writing = false
            s.slots = []
            s.head = 0
            s.replaceIndex = [:]
            s.pendingBytes = 0
            s.promisedBytes = 0
            let waiting = (s.capacityWaiters.map(\.continuation), s.flushWaiters)
            s.capacityWaiters = []
            s.flushWaiters = []
            s.backedUp = false
            return waiting
        }
        capacity.forEach { $0.resume(returning: false) }
        flushed.forEach { $0.resume() }
        onClosed()
        onBackedUpChange()
    }
}
