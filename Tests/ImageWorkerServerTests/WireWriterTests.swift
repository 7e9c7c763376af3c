import Foundation
import ImageWorkerProtocol
import TestSupport
import Testing

@testable import ImageWorkerServer

/// The wire writer on a real pipe: whole lines, in order, none lost, however they are batched.
@Suite struct WireWriterTests {
    @Test func burstsOfMessagesArriveWholeAndInOrder() async throws {
        let (readEnd, writeEnd) = try WorkerProcess.pipeDescriptorsClosedOnExec()
        let writer = WireWriter(fd: writeEnd, onClosed: {})
        // Read concurrently, slowly at first, so that messages pile up and go out in batches. On a
        // thread of its own: a blocking read in a task holds one of the cooperative pool's
        // threads (two on a 2-core machine) and stalled the other tests.
        let read = AsyncStream<[UInt8]>.makeStream()
        Thread.detachNewThread {
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            var reads = 0
            while true {
                let n = Foundation.read(readEnd, &buffer, buffer.count)
                if n <= 0 { break }
                all.append(contentsOf: buffer[0..<n])
                reads += 1
                if reads < 20 { usleep(2_000) }
            }
            read.continuation.yield(all)
            read.continuation.finish()
        }
        let big = String(repeating: "x", count: 100_000)  // larger than a batch: written alone
        for i in 0..<3000 {
            let text = i == 1500 ? big : String(repeating: "y", count: i % 97)
            writer.send(["n": .int(Int64(i)), "text": .string(text)])
        }
        await writer.flush()
        close(writeEnd)
        var bytes: [UInt8] = []
        for await all in read.stream { bytes = all }
        close(readEnd)
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        #expect(lines.count == 3001 && lines.last?.isEmpty == true, "every message ends with its own newline")
        for (i, line) in lines.dropLast().enumerated() {
            let message = try JSONParser.parse(String(decoding: line, as: UTF8.self))
            #expect(message["n"] == .int(Int64(i)))
            if i == 1500 { #expect(message["text"]?.stringValue?.count == 100_000) }
        }
    }

    /// A payload let through counts on the wire at once (`claiming`), before its line exists:
    /// two results let through together back the writer up, the next waits, and it is let in
    /// once the claims are settled (a line queued in their place, or given up) and what waits is
    /// below half the mark.
    @Test func claimedBytesCountBeforeTheirLinesExist() async throws {
        let (readEnd, writeEnd) = try WorkerProcess.pipeDescriptorsClosedOnExec()
        defer { close(readEnd) }
        let changes = LockedState(0)
        let writer = WireWriter(fd: writeEnd, highWaterBytes: 1000, onClosed: {}, onBackedUpChange: { changes.withLock { $0 += 1 } })
        await writer.waitForCapacity(claiming: 600)
        #expect(!writer.backedUp, "600 of 1000")
        await writer.waitForCapacity(claiming: 600)
        #expect(writer.backedUp, "two claims together pass the mark with no line queued")
        let third = Task {
            await writer.waitForCapacity(claiming: 10)
            return writer.backedUp
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(changes.withLock { $0 } == 1)
        // The first claim's line replaces it (small here: the pipe takes it), the second is
        // given up: nothing waits, and the third is let in.
        writer.send(["n": 1], settling: 600)
        await writer.flush()
        #expect(writer.backedUp, "600 still claimed: above half the mark")
        writer.settle(600)
        #expect(await third.value == false)
        #expect(!writer.backedUp && changes.withLock { $0 } == 2)
        close(writeEnd)
    }

    @Test func outputPathsAreMadeAbsoluteWithoutTouchingTheFileSystem() {
        let cwd = FileManager.default.currentDirectoryPath
        #expect(FileTarget.absolute("/a/./b//c/") == "/a/b/c")
        #expect(FileTarget.absolute("out/x.png") == cwd + "/out/x.png")
        #expect(FileTarget.absolute("./x.png") == cwd + "/x.png")
        #expect(FileTarget.absolute("/") == "/")
        #expect(FileTarget.absolute("~/x.png") == NSHomeDirectory() + "/x.png")
        // `..` goes through Foundation, which resolves it (after any link) rather than dropping it.
        #expect(FileTarget.absolute("/tmp/../tmp/x.png").hasSuffix("/tmp/x.png"))
        #expect(!FileTarget.absolute("/tmp/../tmp/x.png").contains(".."))
    }
}
