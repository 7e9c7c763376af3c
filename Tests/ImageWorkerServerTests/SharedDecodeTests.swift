import Dispatch
import Foundation
import ImageDecoding
import NIOCore
import TestSupport
import Testing

@testable import ImageDownloader

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

/// `OutputDelivery.decodeAdmitted`: the tokens that coalesced on one fetch share its decode, each
/// let in with a slot; one that joins the decode gives its slot back at once (the decode holds
/// the slot of the token that started it), and every token's step runs once on the decoding
/// thread, each slot given back once.
@Suite struct CoalescedDecodeSlotTests {
    @Test func aTokenThatJoinsItsFetchsDecodeGivesItsSlotBackAtOnce() async throws {
        let (readEnd, writeEnd) = try WorkerProcess.pipeDescriptorsClosedOnExec()
        defer { close(readEnd) }
        let slots = DecodeSlots(limit: 3, memoryBytes: 1 << 20)
        let deliveries = FetchDeliveries(
            writer: WireWriter(fd: writeEnd, onClosed: {}), settings: LockedState(DecodeSettings()), slots: slots)
        let resource = FetchedResource(
            response: ResponseInfo(status: 200, expectedBytes: nil, mimeType: "image/png", finalURL: "http://x/y", httpVersion: "1.1"),
            body: ByteBuffer(), fetchID: 1, consumers: 3)
        let pipeline = deliveries.makePipeline(1)
        let key = FetchPipeline.State.DecodeKey(format: .rgba, geometry: OutputGeometry())
        let decodes = LockedState(0)
        let finished = LockedState<[String]>([])
        func admitted(_ name: String, lane: inout BlockingWork.Lane) async throws {
            let held = try #require(await slots.acquire(token: .string(name), priority: .normal, cost: 1))
            OutputDelivery.decodeAdmitted(
                resource, token: .string(name), key: key, held: held, slots: slots, pipeline: pipeline, lane: &lane,
                finish: { outcome in
                    if case .success(let image) = outcome, image.width == 2 { finished.withLock { $0.append(name) } }
                },
                decode: { () throws(DecodeError) -> DecodedImage in
                    decodes.withLock { $0 += 1 }
                    return DecodedImage(width: 2, height: 1, layout: .rgba, pixels: Array(repeating: 9, count: 8), format: .png)
                })
        }
        // "a" starts the fetch's decode (handed on to its lane, not run yet); "b" joins it.
        var laneA = BlockingWork.Lane()
        try await admitted("a", lane: &laneA)
        #expect(!laneA.isEmpty && slots.counts.running == 1)
        var laneB = BlockingWork.Lane()
        try await admitted("b", lane: &laneB)
        #expect(laneB.isEmpty, "nothing of its own to run")
        #expect(slots.counts.running == 1, "b's slot went back at once: the decode holds a's")
        // The decode: a's step, a's slot back, then b's step, on this lane's thread.
        laneA.drain()
        #expect(finished.withLock { $0 } == ["a", "b"])
        #expect(slots.counts.running == 0 && slots.counts.waiting == 0)
        // "c" comes after the decode ended (its fetch's decodes are kept until every consumer has
        // its image): its step is handed on to its lane, and its slot goes back at once.
        var laneC = BlockingWork.Lane()
        try await admitted("c", lane: &laneC)
        #expect(!laneC.isEmpty && slots.counts.running == 0)
        laneC.drain()
        #expect(finished.withLock { $0 } == ["a", "b", "c"])
        #expect(decodes.withLock { $0 } == 1, "decoded once")
        #expect(slots.counts.running == 0 && slots.counts.waiting == 0 && slots.counts.bytesInFlight == 0)
    }
}
