import Dispatch
import Foundation
import ImageDecoding
import ImageDownloader
import Testing

@testable import ImageWorkerServer

/// `SharedDecode`: one decode, every waiter resumed with its result, each hook run once with it
/// before any waiter is resumed (on the decoding thread; after the end, handed on to the lane).
@Suite struct SharedDecodeTests {
    private static func image(_ value: UInt8) -> DecodedImage {
        DecodedImage(width: 2, height: 1, layout: .rgb, pixels: Array(repeating: value, count: 6), format: .png)
    }

    @Test func everyWaiterGetsTheOneDecodeAndTheHooksRunFirst() async throws {
        let runs = LockedState(0)
        let gate = DispatchSemaphore(value: 0)
        let shared = SharedDecode { () throws(DecodeError) -> DecodedImage in
            gate.wait()
            runs.withLock { $0 += 1 }
            return Self.image(7)
        }
        let hooks = LockedState<[Int]>([])
        var lane = BlockingWork.Lane()
        for n in 0..<3 {
            shared.whenDone({ outcome, _ in if case .success(let image) = outcome, image.pixels[0] == 7 { hooks.withLock { $0.append(n) } } }, lane: &lane)
        }
        #expect(lane.isEmpty, "hooks wait for the decode")
        let waiters = (0..<3).map { _ in
            Task { () -> (Result<DecodedImage, DecodeError>, Int) in
                let outcome = await shared.value()
                return (outcome, hooks.withLock { $0.count })
            }
        }
        BlockingWork.start { lane in shared.run(&lane) }
        BlockingWork.start { lane in shared.run(&lane) }  // a second run does nothing
        try await Task.sleep(for: .milliseconds(50))
        #expect(hooks.withLock { $0.isEmpty }, "nothing runs before the decode ends")
        gate.signal()
        for waiter in waiters {
            let (outcome, hooksRun) = await waiter.value
            #expect(try outcome.get().pixels == Array(repeating: 7, count: 6))
            #expect(hooksRun == 3, "every hook ran before a waiter was resumed")
        }
        // A hook after the end is handed on to the lane, with the outcome; a waiter gets it at once.
        let late = LockedState(false)
        shared.whenDone({ outcome, _ in late.withLock { $0 = (try? outcome.get())?.width == 2 } }, lane: &lane)
        #expect(!late.withLock { $0 } && !lane.isEmpty, "not run on the caller's thread")
        lane.drain()
        #expect(late.withLock { $0 })
        #expect(try await shared.value().get().width == 2)
        #expect(runs.withLock { $0 } == 1, "decoded once")
        #expect(hooks.withLock { $0.sorted() } == [0, 1, 2], "each hook once")
    }

    @Test func aFailedDecodeFailsEveryWaiter() async {
        let shared = SharedDecode { () throws(DecodeError) -> DecodedImage in throw .corrupt("not an image") }
        BlockingWork.start { lane in shared.run(&lane) }
        for _ in 0..<2 {
            guard case .failure(.corrupt) = await shared.value() else {
                Issue.record("the decode's error")
                continue
            }
        }
    }
}

/// `BlockingWork.Lane`: one piece of work handed on runs next on the same thread, after what
/// runs now (never nested in it); a second one handed on meanwhile runs on the pool, beside it.
@Suite struct BlockingWorkLaneTests {
    @Test func workHandedOnRunsNextOnTheSameThreadAndMoreRunsBeside() async throws {
        let seen = await withCheckedContinuation { (continuation: CheckedContinuation<[String], Never>) in
            BlockingWork.start { lane in
                let me = pthread_self()
                let log = LockedState<[String]>([])
                let besideRan = DispatchSemaphore(value: 0)
                lane.handOn { _ in
                    log.withLock { $0.append(pthread_equal(pthread_self(), me) != 0 ? "next, same thread" : "next, elsewhere") }
                    continuation.resume(returning: log.withLock { $0 })
                }
                lane.handOn { _ in
                    log.withLock { $0.append(pthread_equal(pthread_self(), me) != 0 ? "beside, same thread" : "beside, elsewhere") }
                    besideRan.signal()
                }
                // The second ran on another thread while this one still works: not queued here.
                let beside = besideRan.wait(timeout: .now() + 20) == .success
                log.withLock { $0.append(beside ? "work ends" : "the second piece did not run beside") }
            }
        }
        #expect(seen == ["beside, elsewhere", "work ends", "next, same thread"])
    }
}

/// `DecodeSlots.acquire(admitted:)`: a slot given back from a decoding thread lets the next
/// waiter's work in on that thread, right after the work that gave it back; given back from
/// anywhere else, on the pool; a waiter cancelled first never runs its work.
@Suite struct DecodeHandOnTests {
    @Test func theNextDecodeRunsOnTheThreadThatGaveTheSlotBack() async throws {
        let slots = DecodeSlots(limit: 1, memoryBytes: 1 << 20)
        let first = try #require(await slots.acquire(token: .string("first"), priority: .normal, cost: 1))
        let ranOn = LockedState<pthread_t?>(nil)
        let second = Task {
            await slots.acquire(token: .string("second"), priority: .normal, cost: 1) { slot, _ -> DecodeSlots.Slot in
                ranOn.withLock { $0 = pthread_self() }
                return slot
            }
        }
        try await waitUntil { slots.counts.waiting == 1 }
        let (releasedOn, ranBeforeReturn) = await withCheckedContinuation { (continuation: CheckedContinuation<(pthread_t, Bool), Never>) in
            BlockingWork.start { lane in
                slots.release(first, lane: &lane)
                continuation.resume(returning: (pthread_self(), ranOn.withLock { $0 != nil }))
            }
        }
        let slot = try #require(await second.value)
        #expect(!ranBeforeReturn, "handed on, not run inside the release")
        #expect(ranOn.withLock { $0.map { pthread_equal($0, releasedOn) != 0 } } == true)
        #expect(slots.counts.running == 1)
        slots.release(slot)
        #expect(slots.counts.running == 0)
    }

    @Test func givenBackElsewhereTheWorkRunsOnThePool() async throws {
        let slots = DecodeSlots(limit: 1, memoryBytes: 1 << 20)
        let first = try #require(await slots.acquire(token: .string("first"), priority: .normal, cost: 1))
        let test = pthread_self()
        let second = Task {
            await slots.acquire(token: .string("second"), priority: .normal, cost: 1) { slot, _ -> (DecodeSlots.Slot, Bool) in
                (slot, pthread_equal(pthread_self(), test) == 0)
            }
        }
        try await waitUntil { slots.counts.waiting == 1 }
        slots.release(first)
        let (slot, elsewhere) = try #require(await second.value)
        #expect(elsewhere)
        slots.release(slot)
        // Let in at once: on the pool too.
        let third = await slots.acquire(token: .string("third"), priority: .normal, cost: 1) { slot, _ in slot }
        slots.release(try #require(third))
    }

    @Test func aWaiterCancelledFirstNeverRunsItsWork() async throws {
        let slots = DecodeSlots(limit: 1, memoryBytes: 1 << 20)
        let first = try #require(await slots.acquire(token: .string("first"), priority: .normal, cost: 1))
        let ran = LockedState(false)
        let second = Task {
            await slots.acquire(token: .string("second"), priority: .normal, cost: 1) { slot, _ -> DecodeSlots.Slot in
                ran.withLock { $0 = true }
                return slot
            }
        }
        try await waitUntil { slots.counts.waiting == 1 }
        second.cancel()
        #expect(await second.value == nil)
        var lane = BlockingWork.Lane()
        slots.release(first, lane: &lane)
        #expect(lane.isEmpty, "nobody waits")
        #expect(!ran.withLock { $0 })
        #expect(slots.counts.running == 0 && slots.counts.waiting == 0)
    }
}
