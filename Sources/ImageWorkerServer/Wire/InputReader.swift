import Dispatch
import Foundation
import ImageWorkerProtocol

/// Reads the input descriptor on its own thread (stdin may be a pipe, a terminal or a regular
/// file, so no event loop), frames it, and hands items to the async side one at a time: the
/// thread reads ahead at most a few items, so a client that floods the worker is slowed down
/// rather than buffered without bound.
public final class InputReader: Sendable {
    public enum Item: Sendable {
        case message([UInt8], Framing)
        case tooLarge(limit: Int, Framing)
        case badHeader(String, Framing)
        case end
    }

    /// How long the input must be quiet before a short Content-Length body is looked at.
    static let idleMilliseconds: Int32 = 50

    private let permits: DispatchSemaphore
    public let items: AsyncStream<Item>

    public init(fd: Int32, maximumMessageBytes: Int, readAhead: Int = 8) {
        let (stream, continuation) = AsyncStream<Item>.makeStream()
        self.items = stream
        // Made at 0 and raised to `readAhead`: libdispatch traps when a semaphore is freed below
        // the count it was made with, which a reader dropped with items unacknowledged was.
        let permits = DispatchSemaphore(value: 0)
        for _ in 0..<max(1, readAhead) { permits.signal() }
        self.permits = permits
        let thread = Thread {
            var framer = InputFramer(maximumMessageBytes: maximumMessageBytes)
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            func deliver(_ items: [InputFramer.Item], _ framer: InputFramer) {
                let framing = framer.framing ?? .ndjson
                for item in items {
                    permits.wait()
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

    /// Tells the reader one item has been handled, so it may read another.
    public func itemHandled() {
        permits.signal()
    }
}
