import Dispatch
import Foundation
import ImageWorkerProtocol
import NIOConcurrencyHelpers

/// Reads the input descriptor on its own thread (stdin may be a pipe, a terminal or a regular
/// file, so no event loop), frames it, and hands items to the async side one at a time: the
/// thread reads ahead at most a few items, so a client that floods the worker is slowed down
/// rather than buffered without bound. A thread stopped at that bound is woken once half of its
/// items are handled, not after each one: a burst of requests costs a wake-up per few items.
public final class InputReader: Sendable {
    public enum Item: Sendable {
        case message([UInt8], Framing)
        case tooLarge(limit: Int, Framing)
        case badHeader(String, Framing)
        case end
    }

    /// How long the input must be quiet before a short Content-Length body is looked at.
    static let idleMilliseconds: Int32 = 50

    /// Items handed over and not yet handled, and whether the thread waits for that to drop.
    private struct Flow {
        var outstanding = 0
        var waiting = false
    }

    private let flow = NIOLockedValueBox(Flow())
    private let resume = DispatchSemaphore(value: 0)
    private let readAhead: Int
    public let items: AsyncStream<Item>

    public init(fd: Int32, maximumMessageBytes: Int, readAhead: Int = 8) {
        let (stream, continuation) = AsyncStream<Item>.makeStream()
        self.items = stream
        self.readAhead = max(1, readAhead)
        let thread = Thread { [self] in
            var framer = InputFramer(maximumMessageBytes: maximumMessageBytes)
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            func deliver(_ items: [InputFramer.Item], _ framer: InputFramer) {
                let framing = framer.framing ?? .ndjson
                for item in items {
                    takePermit()
                    switch item {
                    case .message(let bytes): continuation.yield(.message(bytes, framing))
                    case .tooLarge(let limit): continuation.yield(.tooLarge(limit: limit, framing))
                    case .badHeader(let reason): continuation.yield(.badHeader(reason, framing))
                    }
                }
            }
            while true {
                if framer.isAwaitingBody {
                    // A body short of its declared length: after a quiet spell, let the framer
                    // take it if it is already whole (a client may be waiting for its answer).
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    if poll(&p, 1, Self.idleMilliseconds) == 0 {
                        deliver(framer.idle(), framer)
                    }
                }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    deliver(framer.append(buffer[0..<n]), framer)
                } else if n < 0 && errno == EINTR {
                    continue
                } else if n < 0 && errno == EAGAIN {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&p, 1, -1)
                } else {
                    break
                }
            }
            deliver(framer.finish(), framer)
            continuation.yield(.end)
            continuation.finish()
        }
        thread.name = "image-worker input reader"
        thread.start()
    }

    /// Counts one more item handed over, first waiting (on the reader's thread) while
    /// `readAhead` are outstanding.
    private func takePermit() {
        let mustWait = flow.withLockedValue { f -> Bool in
            if f.outstanding < readAhead {
                f.outstanding += 1
                return false
            }
            f.waiting = true
            return true
        }
        guard mustWait else { return }
        resume.wait()
        flow.withLockedValue { $0.outstanding += 1 }
    }

    /// Tells the reader one item has been handled, so it may read another (a waiting reader is
    /// woken when half of `readAhead` are).
    public func itemHandled() {
        let wake = flow.withLockedValue { f -> Bool in
            f.outstanding -= 1
            guard f.waiting, f.outstanding <= readAhead / 2 else { return false }
            f.waiting = false
            return true
        }
        if wake { resume.signal() }
    }
}
