import Dispatch
import Foundation
import ImageDecoding
import Testing

@testable import ImageWorkerServer

/// `SharedDecode`: one decode, every waiter resumed with its result, each waiter's `whenDone`
/// run once before it is resumed (on the decoding thread, or at once after the decode ended).
@Suite struct SharedDecodeTests {
    private static func image(_ value: UInt8) -> DecodedImage {
        DecodedImage(width: 2, height: 1, layout: .rgb, pixels: Array(repeating: value, count: 6), format: .png)
    }

    @Test func everyWaiterGetsTheOneDecodeAndItsHookRunsFirst() async throws {
        let runs = LockedState(0)
        let gate = DispatchSemaphore(value: 0)
        let shared = SharedDecode { () throws(DecodeError) -> DecodedImage in
            gate.wait()
            runs.withLock { $0 += 1 }
            return Self.image(7)
        }
        let hooks = LockedState<[Int]>([])
        let waiters = (0..<3).map { n in
            Task { () -> (Result<DecodedImage, DecodeError>, Bool) in
                let outcome = await shared.value(whenDone: { hooks.withLock { $0.append(n) } })
                // Its hook ran before it was resumed.
                return (outcome, hooks.withLock { $0.contains(n) })
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(hooks.withLock { $0.isEmpty }, "nothing runs before the decode ends")
        gate.signal()
        for waiter in waiters {
            let (outcome, hookFirst) = await waiter.value
            #expect(try outcome.get().pixels == Array(repeating: 7, count: 6))
            #expect(hookFirst)
        }
        // A waiter after the end: the result and its hook at once.
        let late = LockedState(false)
        #expect(try await shared.value(whenDone: { late.withLock { $0 = true } }).get().width == 2)
        #expect(late.withLock { $0 })
        #expect(runs.withLock { $0 } == 1, "decoded once")
        #expect(hooks.withLock { $0.sorted() } == [0, 1, 2], "each hook once")
    }

    @Test func aFailedDecodeFailsEveryWaiter() async {
        let shared = SharedDecode { () throws(DecodeError) -> DecodedImage in throw .corrupt("not an image") }
        for _ in 0..<2 {
            guard case .failure(.corrupt) = await shared.value() else {
                Issue.record("the decode's error")
                continue
            }
        }
    }
}
